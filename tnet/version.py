"""torch.version's build facts, which scripts print beside torch.__version__ (`torch.version.cuda`): those
of the torch whose CUDA (or HIP) runtime holds tnet's device memory and runs its kernels."""
from torch.version import cuda, debug, git_version, hip

__all__ = ["cuda", "debug", "git_version", "hip"]
