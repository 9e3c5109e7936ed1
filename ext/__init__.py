"""ext: PyTorch's autograd, rebuilt over NumPy, and a pack of verified custom Functions.

``import ext as torch`` runs ordinary torch code on the mini-engine: the names, graph nodes,
printed text and error messages are torch's, with ``ext`` where torch says ``torch``.
"""

from __future__ import annotations

import warnings as _pywarnings

from . import _dtype
from ._dtype import (
    bfloat16,
    bool,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    set_default_dtype,
    short,
    uint8,
)
from ._factories import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    is_inference,
    is_tensor,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from ._tensor import Size, Tensor, device
from ._legacy import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    channels_last,
    contiguous_format,
    e,
    finfo,
    get_default_device,
    get_num_threads,
    iinfo,
    inf,
    is_floating_point,
    layout,
    memory_format,
    nan,
    numel,
    pi,
    preserve_format,
    set_default_device,
    set_num_threads,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ._tensor_str import set_printoptions
from ._warnings import is_warn_always_enabled, set_warn_always
from . import autograd, functions  # noqa: E402  (the layers above the Tensor)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

functions.install(globals())
# The factories that take torch's out= (its dtype is the one they make).
for _name in ("arange", "linspace", "logspace", "zeros", "ones", "full", "empty", "eye", "rand",
              "randn", "randint", "randperm"):
    if _name in globals():
        globals()[_name] = functions.free(globals()[_name], _name)
# NumPy reports inf and nan arising inside a kernel (0 * inf, a cast that overflows) with a
# RuntimeWarning; torch computes the same values silently. Only warnings raised from ext's own
# modules are silenced, so a program's own NumPy code keeps its warnings.
_pywarnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ext(\.|$)")

ops = functions._op.ops

__version__ = "0.1.0"
from . import nn
from . import optim
from . import utils  # as `import torch` loads torch.utils.checkpoint
from ._legacy import Variable as _Variable

autograd.Variable = _Variable  # type: ignore[attr-defined]  (torch.autograd.Variable)


_SUBMODULES = ("testing", "cuda", "backends", "signal", "masked", "linalg", "special")


def __getattr__(name: str):
    # Submodules loaded on first use: ext.testing imports torch (its harness compares with
    # it), the CUDA and backend stand-ins are rarely asked for, and torch.linalg's,
    # torch.special's and the other op families' names load their families
    # (ext.functions._lazy).
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    family = functions.family_of(name)
    if family is not None:
        functions.load(family)
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    from .functions._lazy_names import FUNCTIONS as _lazy

    return sorted({*globals(), *_SUBMODULES, *_lazy})
from ._torch_import import after_torch_import as _after_torch_import


def _load_bridge() -> None:
    from . import compat  # noqa: F401  (prepares every Function's torch twin)


_after_torch_import(_load_bridge)
