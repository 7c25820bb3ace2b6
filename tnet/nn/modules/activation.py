"""torch.nn.modules.activation's import path: tnet.nn's layers, re-exported, and MultiheadAttention's out_proj
class, which torch's module imports (forks of MultiheadAttention import it from here)."""
from .. import (CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
    MultiheadAttention, PReLU, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmax2d, Softmin, Softplus,
    Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from ..transformer import NonDynamicallyQuantizableLinear

__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "MultiheadAttention", "PReLU", "RReLU", "ReLU", "ReLU6",
           "SELU", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign",
           "Tanh", "Tanhshrink", "Threshold", "NonDynamicallyQuantizableLinear"]
