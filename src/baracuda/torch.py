"""`baracuda.torch`: torch-compatible functions (torch's names and signatures), differentiable,
working in eager mode, under torch.compile and in CUDA graphs. See frontends/torch."""

from .frontends.torch import *  # noqa: F403
from .frontends.torch import __all__  # noqa: F401
