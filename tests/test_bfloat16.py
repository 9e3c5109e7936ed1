"""bfloat16: the dtype, its promotion, printing, factories, values and gradients, as torch's."""

from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import torch

import ext
from ext._tensor_str import tensor_repr

NAMES = ["bfloat16", "float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
         "bool"]


def name(dt) -> str:
    """A dtype's name without its module (``bfloat16`` for ``ext.bfloat16``)."""
    return str(dt).rsplit(".", 1)[-1]


def bf16(T, values):
    return T.tensor(values, dtype=T.bfloat16)


def bits(t) -> np.ndarray:
    """The 16-bit patterns of a bfloat16 tensor of either engine."""
    int16 = torch.int16 if isinstance(t, torch.Tensor) else ext.int16
    return t.detach().view(int16).numpy().view(np.uint16)


def same_bits(a, b) -> bool:
    """Whether an ext and a torch bfloat16 tensor hold the same values, bit for bit."""
    assert name(a.dtype) == name(b.dtype) == "bfloat16"
    return tuple(a.shape) == tuple(b.shape) and np.array_equal(bits(a), bits(b))


def pair(rng, shape, scale=3.0):
    """The same random bfloat16 values on both engines."""
    values = (rng.standard_normal(shape) * scale).astype(np.float32)
    return ext.tensor(values).to(ext.bfloat16), torch.tensor(values).to(torch.bfloat16)


# --- the dtype ------------------------------------------------------------------------------------


def test_bfloat16_is_a_two_byte_floating_dtype(T):
    dt = T.bfloat16
    assert isinstance(dt, T.dtype)
    assert repr(dt) == str(dt) == f"{T.__name__}.bfloat16"
    assert dt.itemsize == 2
    assert dt.is_floating_point and dt.is_signed and not dt.is_complex
    assert dt != T.float16 and dt != T.float32


def test_import_ext_does_not_import_ml_dtypes():
    code = ("import sys, ext; assert 'ml_dtypes' not in sys.modules; "
            "ext.zeros(1, dtype=ext.bfloat16); assert 'ml_dtypes' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("other", NAMES)
def test_promote_types_with_bfloat16_is_torchs(T, other):
    for a, b in (("bfloat16", other), (other, "bfloat16")):
        got = T.promote_types(getattr(T, a), getattr(T, b))
        assert name(got) == name(torch.promote_types(getattr(torch, a), getattr(torch, b)))


@pytest.mark.parametrize("other", NAMES)
def test_result_type_of_bfloat16_and_each_dtype_is_torchs(T, other):
    for da, db in ((1, 1), (1, 0), (0, 1), (0, 0)):
        a = T.ones((2,) * da, dtype=T.bfloat16)
        b = T.ones((2,) * db, dtype=getattr(T, other))
        want = torch.result_type(torch.ones((2,) * da, dtype=torch.bfloat16),
                                 torch.ones((2,) * db, dtype=getattr(torch, other)))
        assert name((a + b).dtype) == name((b * a).dtype) == name(want)


@pytest.mark.parametrize("number", [2, 2.5, True])
def test_python_numbers_keep_bfloat16(T, number):
    x = bf16(T, [1.5, 2.25])
    want = torch.result_type(torch.ones(2, dtype=torch.bfloat16), number)
    assert name((x + number).dtype) == name((number * x).dtype) == name(want) == "bfloat16"


def test_bfloat16_as_the_default_dtype(T):
    T.set_default_dtype(T.bfloat16)
    try:
        assert T.tensor([1.5]).dtype is T.bfloat16
        assert (T.tensor([1]) / 2).dtype is T.bfloat16
        assert repr(T.ones(2)) == "tensor([1., 1.])"
        assert repr(T.tensor([1.5], dtype=T.float32)) == f"tensor([1.5000], dtype={T.__name__}" \
                                                          ".float32)"
    finally:
        T.set_default_dtype(T.float32)


def test_finfo_of_bfloat16_is_torchs(T):
    got, want = T.finfo(T.bfloat16), torch.finfo(torch.bfloat16)
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(got, field) == getattr(want, field), field
    assert repr(got) == repr(want)


# --- legacy names and sizes -----------------------------------------------------------------------


def test_type_string_element_size_and_legacy_type(T):
    x = bf16(T, [1.5, 2.25])
    assert x.type() == f"{T.__name__}.BFloat16Tensor"
    assert x.element_size() == 2
    assert isinstance(x, T.BFloat16Tensor) and not isinstance(x, T.HalfTensor)
    assert T.ones(2).type(T.BFloat16Tensor).dtype is T.bfloat16
    assert T.ones(2).type("torch.BFloat16Tensor").dtype is T.bfloat16
    assert T.BFloat16Tensor([1.3, 2]).dtype is T.bfloat16
    assert tuple(T.BFloat16Tensor(2, 3).shape) == (2, 3)


def test_numpy_refuses_bfloat16_as_torch_does(T):
    x = bf16(T, [1.5])
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        x.numpy()
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.requires_grad_().numpy()
    assert x.tolist() == [1.5]  # (Python numbers are fine)


def test_an_ml_dtypes_array_is_refused_as_torch_refuses_it(T):
    arr = np.ones(2, ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type ml_dtypes.bfloat16"):
        T.from_numpy(arr)
    with pytest.raises(TypeError, match="can't convert np.ndarray of type ml_dtypes.bfloat16"):
        T.tensor(arr)


# --- printing -------------------------------------------------------------------------------------

PRINTED = {
    "fractions": [1.2345, 2.5, -3.1e-3, 100.7],
    "integers": [1.0, -2.0, 300.0],
    "scientific": [[1.2345, 1e-5], [1e5, 3.0]],
    "scalar": 0.1,
    "special": [float("inf"), float("-inf"), float("nan"), 0.0],
    "summarised": list(np.linspace(-5, 5, 1500)),
}


@pytest.mark.parametrize("case", PRINTED)
def test_printed_as_torch_prints_bfloat16(case):
    values = np.asarray(PRINTED[case], np.float32)
    t = torch.tensor(values).to(torch.bfloat16)
    x = ext.tensor(values).to(ext.bfloat16)
    rounded = t.float().numpy().astype(ml_dtypes.bfloat16)
    # torch's text, rebuilt from the rounded values, is ext's text with ext's module name
    assert repr(t) == tensor_repr(rounded, dtype_name="bfloat16", namespace="torch")
    assert repr(x) == str(x) == tensor_repr(rounded, dtype_name="bfloat16", namespace="ext")


def test_printed_with_autograd_state(T):
    x = bf16(T, [1.5, 2.25]).requires_grad_()
    assert repr(x) == f"tensor([1.5000, 2.2500], dtype={T.__name__}.bfloat16, requires_grad=True)"
    assert repr(x * 2) == f"tensor([3.0000, 4.5000], dtype={T.__name__}.bfloat16, " \
                          "grad_fn=<MulBackward0>)"


# --- factories and conversions --------------------------------------------------------------------

FACTORIES = {
    "tensor": lambda T: T.tensor([1.2345678, -3.14159, 1e39, 2 ** 40 + 12345],
                                 dtype=T.bfloat16),
    "zeros": lambda T: T.zeros(2, 3, dtype=T.bfloat16),
    "ones": lambda T: T.ones(4, dtype=T.bfloat16),
    "full": lambda T: T.full((3,), 1.3, dtype=T.bfloat16),
    "arange_step": lambda T: T.arange(0, 1, 0.1, dtype=T.bfloat16),
    "arange_ints": lambda T: T.arange(300, dtype=T.bfloat16),
    "zeros_like": lambda T: T.zeros_like(T.ones(2, dtype=T.bfloat16)),
    "to": lambda T: T.tensor([1.2345678, 3.14159, 1 + 2 ** -8, 1 + 3 * 2 ** -8]).to(T.bfloat16),
    "to_from_double": lambda T: T.tensor([1 + 2 ** -8 + 2 ** -30], dtype=T.float64)
    .to(T.bfloat16),
    "method": lambda T: T.tensor([1.2345678, 3.14159]).bfloat16(),
    "from_int64": lambda T: T.tensor([257, 2 ** 40 + 12345]).to(T.bfloat16),
}


@pytest.mark.parametrize("factory", FACTORIES)
def test_factories_and_conversions_round_as_torch_does(factory):
    assert same_bits(FACTORIES[factory](ext), FACTORIES[factory](torch))


def test_empty_makes_bfloat16(T):
    x = T.empty(2, 3, dtype=T.bfloat16)
    assert x.dtype is T.bfloat16 and tuple(x.shape) == (2, 3)


def test_full_refuses_a_value_beyond_bfloat16s_range(T):
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::BFloat16 "
                                           "without overflow"):
        T.full((2,), 1e39, dtype=T.bfloat16)


def test_conversions_back_are_exact(T):
    x = bf16(T, [1.2345678, -3.0, 0.1])
    assert x.float().to(T.bfloat16).tolist() == x.tolist()
    assert x.double().tolist() == x.float().tolist()
    assert x.to(T.int64).tolist() == [1, -3, 0]


# --- values, bit for bit --------------------------------------------------------------------------

OPS = {
    "add": (lambda a, b: a + b, 2),
    "sub": (lambda a, b: a - b, 2),
    "mul": (lambda a, b: a * b, 2),
    "div": (lambda a, b: a / b, 2),
    "add_float": (lambda a: a + 0.1234567, 1),
    "sub_float": (lambda a: 1.0001 - a, 1),
    "mul_float": (lambda a: a * 0.1234567, 1),
    "div_float": (lambda a: a / 0.3, 1),
    "mul_int": (lambda a: a * 257, 1),
    "pow_float": (lambda a: a.abs() ** 1.37, 1),
    "exp": (lambda a: a.exp(), 1),
    "tanh": (lambda a: a.tanh(), 1),
    "sigmoid": (lambda a: a.sigmoid(), 1),
    "sum": (lambda a: a.sum(), 1),
    "sum_dim": (lambda a: a.sum(1), 1),
    "mean": (lambda a: a.mean(), 1),
    "mean_dim": (lambda a: a.mean(0), 1),
    "var": (lambda a: a.var(1), 1),
    "cumsum": (lambda a: a.cumsum(0), 1),
    "add_alpha": (lambda a, b: a.add(b, alpha=-0.37), 2),
    "sub_alpha": (lambda a, b: a.sub(b, alpha=0.1), 2),
    "add_alpha_inplace": (lambda a, b: a.clone().add_(b, alpha=3), 2),
    "mul_inplace": (lambda a, b: a.clone().mul_(b), 2),
    "matmul": (lambda a, b: a @ b.transpose(0, 1), 2),
    "matmul_vector": (lambda a, b: a @ b[0], 2),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("seed", [0, 1])
def test_values_match_torch_bit_for_bit(op, seed):
    fn, arity = OPS[op]
    rng = np.random.default_rng(seed)
    # (rows of 64: torch's vectorized loops take every element, none is left to its scalar
    # loop, which rounds alpha * b to bfloat16 before the sum)
    pairs = [pair(rng, (40, 64)) for _ in range(arity)]
    got = fn(*(e for e, _ in pairs))
    want = fn(*(t for _, t in pairs))
    assert same_bits(got, want)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "rsqrt", "tanh", "sin", "expm1", "log1p",
                                "reciprocal", "atan"])
def test_unary_ops_match_torch_on_every_finite_bfloat16(op):
    every = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16) \
        .view(torch.bfloat16)
    every = every[torch.isfinite(every)]
    mine = ext.tensor(every.float().numpy()).to(ext.bfloat16)
    with np.errstate(all="ignore"):
        got = getattr(mine, op)()
    want = getattr(every, op)()
    nan = np.isnan(got.float().numpy()) & np.isnan(want.float().numpy())
    assert np.array_equal(bits(got)[~nan], bits(want)[~nan])


# --- autograd -------------------------------------------------------------------------------------


def test_gradients_are_bfloat16_and_torchs():
    rng = np.random.default_rng(3)
    (xe, xt), (we, wt) = pair(rng, (5, 4)), pair(rng, (4, 3))
    results = []
    for T, x, w in ((ext, xe, we), (torch, xt, wt)):
        w.requires_grad_()
        y = ((x @ w).tanh() * 1.5).sum()
        y.backward()
        assert w.grad.dtype is T.bfloat16
        assert type(y.grad_fn).__name__ == "SumBackward0"
        results.append((y, w.grad))
    (ye, ge), (yt, gt) = results
    assert same_bits(ye, yt) and same_bits(ge, gt)


def test_a_function_runs_on_bfloat16_on_both_engines():
    class Swish(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x.sigmoid()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            s = x.sigmoid()
            return grad * s * (1 + x * (1 - s))

    xe, xt = pair(np.random.default_rng(4), (64,))
    xe.requires_grad_()
    xt.requires_grad_()
    ye, yt = Swish.apply(xe), Swish.apply(xt)
    ye.sum().backward()
    yt.sum().backward()
    assert same_bits(ye, yt)
    assert same_bits(xe.grad, xt.grad)


@pytest.mark.ext_only
def test_the_harness_carries_bfloat16_across_engines():
    from ext.testing._harness import _as_torch, _ext_value

    xe, xt = pair(np.random.default_rng(5), (3, 4))
    back = _ext_value(xt.requires_grad_())
    assert back.dtype is ext.bfloat16 and back.requires_grad and same_bits(back, xt)
    there = _as_torch(xe)
    assert there.dtype is torch.bfloat16 and same_bits(xe, there)
    assert _ext_value(torch.bfloat16) is ext.bfloat16


def test_bfloat16_tensors_pickle_and_copy():
    import copy
    import pickle

    x = bf16(ext, [[1.2345, -2.5], [0.1, 3.0]])
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), x.clone()):
        assert y.dtype is ext.bfloat16 and np.array_equal(bits(y), bits(x))


def test_modules_convert_to_bfloat16(T):
    layer = T.nn.Linear(3, 2).bfloat16()
    assert layer.weight.dtype is T.bfloat16 and layer.bias.dtype is T.bfloat16
    assert layer(T.ones(4, 3, dtype=T.bfloat16)).dtype is T.bfloat16
    assert T.nn.Linear(3, 2).to(T.bfloat16).weight.dtype is T.bfloat16


def test_sgd_steps_bfloat16_parameters_as_torch():
    results = []
    values = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    for T in (ext, torch):
        w = T.nn.Parameter(T.tensor(values).to(T.bfloat16))
        opt = T.optim.SGD([w], lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        results.append(w)
    assert same_bits(*results)


def test_assert_close_takes_bfloat16s_tolerance(T):
    x = bf16(T, [1.0, 2.0])
    T.testing.assert_close(x, x * 1.01)  # (within bfloat16's rtol of 1.6e-2)
    with pytest.raises(AssertionError, match="Greatest relative difference: 0.5 at index \\(0,\\) "
                                             "\\(up to 0.016 allowed\\)"):
        T.testing.assert_close(x, x + 1)
    T.testing.assert_close(x, x.float(), check_dtype=False)
