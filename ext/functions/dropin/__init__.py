"""The drop-in pack: custom Functions that run on ext and torch tensors alike, each with its
contract (``PackFunction.contract()``) and verified against torch (tests/test_pack.py)."""

from .._op import register_pack
from ._base import CONTRACT_FIELDS, PackFunction
from .activations import (
    Gelu,
    GeluTanh,
    Hardmish,
    Hardsigmoid,
    Hardswish,
    Mish,
    Silu,
    gelu,
    gelu_tanh,
    hardmish,
    hardsigmoid,
    hardswish,
    mish,
    silu,
)
from .gated import GeGLU, SwiGLU, geglu, swiglu
from .gradient import GradReverse, GradScale, grad_reverse, grad_scale
from .normalizers import (
    Entmax15,
    RMSNorm,
    SafeSoftmax,
    Sparsemax,
    entmax15,
    rms_norm,
    safe_softmax,
    sparsemax,
)
from .losses import (
    CrossEntropyLSE,
    FusedLinearCrossEntropy,
    cross_entropy_lse,
    fused_linear_cross_entropy,
)
from .quant import (
    ClampMasked,
    FakeQuantSTE,
    Quantize,
    RoundSTE,
    SignSTE,
    clamp_masked,
    fake_quant_ste,
    quantize,
    round_ste,
    sign_ste,
)
from .reductions import Log1mexp, SafeLogsumexp, log1mexp, safe_logsumexp
from .classic import AddMul, Exp, Softmax

# (op name, the function, its Function): the pack as the registry and the contract table list it
OPS = (
    # (gelu_tanh before gelu: a parity case is keyed by the first op its name starts with)
    ("silu", silu, Silu), ("mish", mish, Mish), ("gelu_tanh", gelu_tanh, GeluTanh),
    ("gelu", gelu, Gelu), ("hardswish", hardswish, Hardswish),
    ("hardsigmoid", hardsigmoid, Hardsigmoid),
    ("hardmish", hardmish, Hardmish), ("swiglu", swiglu, SwiGLU), ("geglu", geglu, GeGLU),
    ("clamp_masked", clamp_masked, ClampMasked), ("round_ste", round_ste, RoundSTE),
    ("sign_ste", sign_ste, SignSTE), ("fake_quant_ste", fake_quant_ste, FakeQuantSTE),
    ("quantize", quantize, Quantize), ("grad_reverse", grad_reverse, GradReverse),
    ("grad_scale", grad_scale, GradScale),
    ("sparsemax", sparsemax, Sparsemax), ("entmax15", entmax15, Entmax15),
    ("safe_softmax", safe_softmax, SafeSoftmax), ("rms_norm", rms_norm, RMSNorm),
    ("safe_logsumexp", safe_logsumexp, SafeLogsumexp), ("log1mexp", log1mexp, Log1mexp),
    ("cross_entropy_lse", cross_entropy_lse, CrossEntropyLSE),
    ("fused_linear_cross_entropy", fused_linear_cross_entropy, FusedLinearCrossEntropy),
)
FUNCTIONS = {name: fn for name, fn, _ in OPS}
CLASSES = {cls.__name__: cls for cls in (
    *(c for _, _, c in OPS), Exp, AddMul, Softmax)}
for _name, _fn, _cls in OPS:
    register_pack(_name, _fn, _cls)
