"""torch.utils.model_zoo, the older name of torch.hub's loader (`model_zoo.load_url(model_urls[arch])`
in copied model files): tnet.hub's, which raises for torch's pickled weights."""
from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
