"""Forward-mode AD of every built-in op family: the tangent equals the directional derivative.

Each case runs an op inside ``dual_level()`` on NumPy-built float64 inputs, some of them duals
with random tangents ``v``, and compares each floating output's tangent with the central
difference ``(f(x + e v) - f(x - e v)) / (2 e)`` computed on the same backend without forward AD
(and its primal with ``f(x)``). Integer outputs (indices) must have no tangent.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ANY, POS, sample, to_np

# torch 2.13 warns "torch.jit.script is deprecated" when forward AD is used: noise.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-7


def a(*shape):
    """An input spec: values of ``shape`` with magnitude in [0.5, 2] and a random sign."""
    return (ANY, shape)


def p(*shape):
    """An input spec: positive values of ``shape`` in [0.5, 2]."""
    return (POS, shape)


def build(rng, spec):
    return np.array(spec) if isinstance(spec, np.ndarray) else sample(rng, spec[1], spec[0])


def outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check_jvp(T, rng, fn, specs, dual=None, eps=EPS, exact=False, requires_grad=False):
    """Compare the forward-AD tangents of ``fn(T, *inputs)`` with central differences.

    ``dual`` lists the inputs made dual (all by default). With ``exact``, tangents are multiples
    of 1/8, so that a float32 op on quantised inputs differentiates exactly with ``eps = 2**-k``.
    With ``requires_grad``, the primals of the duals are leaves that require grad.
    """
    inputs = [build(rng, s) for s in specs]
    dual = tuple(range(len(inputs))) if dual is None else dual
    if exact:
        tangents = {i: (rng.integers(-16, 17, inputs[i].shape) / 8).astype(inputs[i].dtype)
                    for i in dual}
    else:
        tangents = {i: rng.standard_normal(inputs[i].shape).astype(inputs[i].dtype)
                    for i in dual}

    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        args = [fwAD.make_dual(T.tensor(x, requires_grad=requires_grad), T.tensor(tangents[i]))
                if i in tangents
                else T.tensor(x) for i, x in enumerate(inputs)]
        got = []
        for o in outputs(fn(T, *args)):
            primal, tangent = fwAD.unpack_dual(o)
            got.append((to_np(primal).copy(), None if tangent is None else to_np(tangent).copy()))

    def run(sign):
        args = [T.tensor(x + sign * eps * tangents[i]) if i in tangents else T.tensor(x)
                for i, x in enumerate(inputs)]
        return [to_np(o).copy() for o in outputs(fn(T, *args))]

    plain, plus, minus = run(0), run(1), run(-1)
    assert len(got) == len(plain)
    for k, ((primal, tangent), value, hi, lo) in enumerate(zip(got, plain, plus, minus)):
        np.testing.assert_allclose(primal, value, rtol=1e-12, atol=1e-12,
                                   err_msg=f"primal of output {k}")
        if not np.issubdtype(value.dtype, np.floating):
            assert tangent is None, f"integer output {k} has a tangent"
            continue
        assert tangent is not None, f"output {k} has no tangent"
        assert tangent.shape == value.shape, f"tangent shape of output {k}"
        assert tangent.dtype == value.dtype, f"tangent dtype of output {k}"
        expected = (hi.astype(np.float64) - lo.astype(np.float64)) / (2 * eps)
        np.testing.assert_allclose(tangent, expected, rtol=RTOL, atol=ATOL,
                                   err_msg=f"tangent of output {k}")


def case(name, fn, *specs, dual=None, **kw):
    return pytest.param(fn, specs, dual, kw, id=name)


def run_cases(T, rng, fn, specs, dual, kw, requires_grad=False):
    check_jvp(T, rng, fn, specs, dual, requires_grad=requires_grad, **kw)


def idx(T, values):
    return T.tensor(np.array(values))


MASK = np.array([[True, False, True], [False, False, True]])
CLAMP_X = np.array([-2.0, -0.3, 0.4, 1.5, 2.5, 0.0])
CLAMP_LO = np.array([-1.0, -1.0, 0.0, 0.0, 0.0, -0.5])
CLAMP_HI = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 0.5])
ONE_ZERO = np.array([[1.5, 0.0, -2.0], [0.7, -1.2, 1.1]])
TWO_ZEROS = np.array([[0.0, 0.0, -2.0], [0.7, 0.0, 1.1]])
WITH_ZERO_EXP = np.array([[0.0, 1.5, -1.0], [2.0, 0.0, 0.5]])
TAN_X = np.array([-1.2, -0.7, -0.2, 0.3, 0.8, 1.1])
# multiples of 1/8: float32 holds them and their small shifts exactly
QUANT = np.array([[0.5, -1.25, 1.75], [-0.875, 2.0, 0.125]])


# ---------------------------------------------------------------------------------- arithmetic
ARITHMETIC = [
    case("add", lambda T, x, y: x + y, a(2, 3), a(2, 3)),
    case("add_broadcast", lambda T, x, y: x + y, a(2, 3), a(3)),
    case("add_first_dual", lambda T, x, y: x + y, a(2, 3), a(2, 3), dual=(0,)),
    case("add_second_dual", lambda T, x, y: x + y, a(2, 3), a(2, 3), dual=(1,)),
    case("add_alpha", lambda T, x, y: T.add(x, y, alpha=2.5), a(2, 3), a(2, 3)),
    case("add_alpha_method", lambda T, x, y: x.add(y, alpha=-2), a(2, 3), a(3), dual=(1,)),
    case("add_scalar", lambda T, x: x + 2.5, a(2, 3)),
    case("radd_scalar", lambda T, x: 2.5 + x, a(2, 3)),
    case("add_0d", lambda T, x, y: x + y, a(), a(2, 3)),
    case("sub", lambda T, x, y: x - y, a(2, 3), a(2, 3)),
    case("sub_broadcast", lambda T, x, y: T.sub(x, y), a(2, 1), a(3)),
    case("sub_alpha", lambda T, x, y: T.sub(x, y, alpha=3), a(2, 3), a(2, 3)),
    case("sub_second_dual", lambda T, x, y: x - y, a(2, 3), a(2, 3), dual=(1,)),
    case("sub_scalar", lambda T, x: x - 2, a(2, 3)),
    case("rsub_scalar", lambda T, x: 2 - x, a(2, 3)),
    case("rsub", lambda T, x, y: T.rsub(x, y), a(2, 3), a(2, 3)),
    case("rsub_alpha", lambda T, x, y: T.rsub(x, y, alpha=2), a(2, 3), a(2, 3)),
    case("rsub_tensor_scalar", lambda T, x: T.rsub(x, 1.5), a(2, 3)),
    case("mul", lambda T, x, y: x * y, a(2, 3), a(2, 3)),
    case("mul_broadcast", lambda T, x, y: T.mul(x, y), a(2, 3), a(2, 1)),
    case("mul_first_dual", lambda T, x, y: x.mul(y), a(2, 3), a(2, 3), dual=(0,)),
    case("mul_scalar", lambda T, x: x * 3, a(2, 3)),
    case("rmul_scalar", lambda T, x: -1.5 * x, a(2, 3)),
    case("mul_0d", lambda T, x, y: x * y, a(), a(2, 3)),
    case("mul_self", lambda T, x: x * x, a(2, 3)),
    case("mul_int_tensor", lambda T, x: x * idx(T, [[1, -2, 3], [0, 4, 5]]), a(2, 3)),
    case("multiply", lambda T, x, y: T.multiply(x, y), a(2, 3), a(3)),
    case("div", lambda T, x, y: x / y, a(2, 3), a(2, 3)),
    case("div_broadcast", lambda T, x, y: T.div(x, y), a(2, 3), a(3)),
    case("div_second_dual", lambda T, x, y: x / y, a(2, 3), a(2, 3), dual=(1,)),
    case("div_scalar", lambda T, x: x / 3, a(2, 3)),
    case("rdiv_scalar", lambda T, x: 3 / x, a(2, 3)),
    case("true_divide", lambda T, x, y: T.true_divide(x, y), a(2, 3), a(2, 3)),
    case("divide", lambda T, x, y: x.divide(y), a(2, 3), a(2, 3)),
    case("neg", lambda T, x: -x, a(2, 3)),
    case("neg_fn", lambda T, x: T.neg(x), a(2, 3)),
    case("negative", lambda T, x: x.negative(), a(2, 3)),
    case("reciprocal", lambda T, x: x.reciprocal(), a(2, 3)),
    case("pow_2", lambda T, x: x ** 2, a(2, 3)),
    case("pow_3", lambda T, x: T.pow(x, 3), a(2, 3)),
    case("pow_neg_2", lambda T, x: x ** -2, a(2, 3)),
    case("pow_half", lambda T, x: x ** 0.5, p(2, 3)),
    case("pow_float", lambda T, x: x.pow(-1.5), p(2, 3)),
    case("pow_0", lambda T, x: x ** 0, a(2, 3)),
    case("pow_1", lambda T, x: x ** 1, a(2, 3)),
    case("pow_tensor", lambda T, x, y: x ** y, p(2, 3), a(2, 3)),
    case("pow_tensor_base_dual", lambda T, x, y: x ** y, p(2, 3), a(2, 3), dual=(0,)),
    case("pow_tensor_exp_dual", lambda T, x, y: T.pow(x, y), p(2, 3), a(2, 3), dual=(1,)),
    case("pow_tensor_broadcast", lambda T, x, y: x.pow(y), p(2, 3), a(3)),
    case("pow_tensor_zero_exponent", lambda T, x, y: x ** y, p(2, 3), WITH_ZERO_EXP),
    case("pow_int_tensor", lambda T, x: x ** idx(T, [[0, 1, 2], [3, -1, 2]]), a(2, 3)),
    case("rpow", lambda T, x: 2 ** x, a(2, 3)),
    case("rpow_float", lambda T, x: 0.5 ** x, a(2, 3)),
    case("pow_scalar_base", lambda T, x: T.pow(3.0, x), a(2, 3)),
    case("composite", lambda T, x, y: (x.exp() * y.sin() + x / (y * y + 1)).sum(1),
         a(2, 3), a(2, 3)),
]

# ---------------------------------------------------------------------------------- unary math
UNARY = [
    case("exp", lambda T, x: x.exp(), a(2, 3)),
    case("exp_fn", lambda T, x: T.exp(x), a(2, 3)),
    case("log", lambda T, x: x.log(), p(2, 3)),
    case("log_fn", lambda T, x: T.log(x), p(2, 3)),
    case("sin", lambda T, x: T.sin(x), a(2, 3)),
    case("cos", lambda T, x: x.cos(), a(2, 3)),
    case("tan", lambda T, x: x.tan(), TAN_X),
    case("tanh", lambda T, x: T.tanh(x), a(2, 3)),
    case("sigmoid", lambda T, x: x.sigmoid(), a(2, 3)),
    case("sqrt", lambda T, x: T.sqrt(x), p(2, 3)),
    case("rsqrt", lambda T, x: x.rsqrt(), p(2, 3)),
    case("expm1", lambda T, x: T.expm1(x), a(2, 3)),
    case("log1p", lambda T, x: x.log1p(), p(2, 3)),
    case("abs", lambda T, x: x.abs(), a(2, 3)),
    case("abs_fn", lambda T, x: T.abs(x), a(2, 3)),
    case("relu", lambda T, x: x.relu(), a(2, 3)),
    case("relu_fn", lambda T, x: T.relu(x), a(2, 3)),
    case("sign", lambda T, x: x.sign(), a(2, 3)),
    case("round", lambda T, x: T.round(x), a(2, 3)),
    case("round_decimals", lambda T, x: x.round(decimals=1), a(2, 3)),
    case("floor", lambda T, x: x.floor(), a(2, 3)),
    case("ceil", lambda T, x: T.ceil(x), a(2, 3)),
    case("nan_to_num", lambda T, x: T.nan_to_num(x), a(2, 3)),
    case("nn_relu", lambda T, x: T.nn.functional.relu(x), a(2, 3)),
    case("nn_sigmoid", lambda T, x: T.nn.functional.sigmoid(x), a(2, 3)),
    case("nn_tanh", lambda T, x: T.nn.functional.tanh(x), a(2, 3)),
    case("unary_0d", lambda T, x: x.exp().sin(), a()),
]

# ---------------------------------------------------------------------------------- selection
SELECTION = [
    case("clamp", lambda T, x: x.clamp(-0.5, 1.0), CLAMP_X),
    case("clamp_fn", lambda T, x: T.clamp(x, min=-1.0, max=1.0), a(2, 3)),
    case("clamp_min_only", lambda T, x: x.clamp(min=0.0), a(2, 3)),
    case("clamp_max_only", lambda T, x: T.clamp(x, max=0.0), a(2, 3)),
    case("clip", lambda T, x: T.clip(x, -0.5, 1.0), CLAMP_X),
    case("clamp_min", lambda T, x: x.clamp_min(0.2), CLAMP_X),
    case("clamp_max", lambda T, x: T.clamp_max(x, 0.2), CLAMP_X),
    case("clamp_tensor", lambda T, x, lo, hi: T.clamp(x, lo, hi), CLAMP_X, CLAMP_LO, CLAMP_HI),
    case("clamp_tensor_x_dual", lambda T, x, lo, hi: x.clamp(lo, hi),
         CLAMP_X, CLAMP_LO, CLAMP_HI, dual=(0,)),
    case("clamp_tensor_bounds_dual", lambda T, x, lo, hi: x.clamp(lo, hi),
         CLAMP_X, CLAMP_LO, CLAMP_HI, dual=(1, 2)),
    case("clamp_tensor_crossed", lambda T, x, lo, hi: T.clamp(x, lo, hi),
         CLAMP_X, CLAMP_HI, CLAMP_LO),
    case("clamp_tensor_min", lambda T, x, lo: T.clamp(x, min=lo), CLAMP_X, CLAMP_LO),
    case("clamp_tensor_max", lambda T, x, hi: x.clamp(max=hi), CLAMP_X, CLAMP_HI),
    case("clamp_tensor_broadcast", lambda T, x, lo, hi: T.clamp(x, lo, hi),
         CLAMP_X.reshape(2, 3), np.array([-1.0, 0.5, -0.2]), np.array([1.0, 1.0, 0.5])),
    case("clamp_min_tensor", lambda T, x, lo: T.clamp_min(x, lo), CLAMP_X, CLAMP_LO),
    case("clamp_max_tensor", lambda T, x, hi: x.clamp_max(hi), CLAMP_X, CLAMP_HI),
    case("maximum", lambda T, x, y: T.maximum(x, y), a(2, 3), a(2, 3)),
    case("maximum_broadcast", lambda T, x, y: x.maximum(y), a(2, 3), a(3)),
    case("maximum_first_dual", lambda T, x, y: T.maximum(x, y), a(2, 3), a(2, 3), dual=(0,)),
    case("minimum", lambda T, x, y: T.minimum(x, y), a(2, 3), a(2, 3)),
    case("minimum_second_dual", lambda T, x, y: x.minimum(y), a(2, 3), a(2, 3), dual=(1,)),
    case("max_binary", lambda T, x, y: T.max(x, y), a(2, 3), a(2, 3)),
    case("min_binary", lambda T, x, y: T.min(x, y), a(2, 3), a(2, 3)),
    case("where", lambda T, x, y: T.where(T.tensor(MASK), x, y), a(2, 3), a(2, 3)),
    case("where_first_dual", lambda T, x, y: T.where(T.tensor(MASK), x, y),
         a(2, 3), a(2, 3), dual=(0,)),
    case("where_method", lambda T, x, y: x.where(T.tensor(MASK), y), a(2, 3), a(3)),
    case("where_scalar", lambda T, x: T.where(T.tensor(MASK), x, 0.0), a(2, 3)),
    case("where_scalar_first", lambda T, x: T.where(T.tensor(MASK), 1.5, x), a(2, 3)),
    case("where_condition_from_x", lambda T, x: T.where(x > 0, x * 2, x.exp()), a(2, 3)),
]

# ---------------------------------------------------------------------------------- reductions
REDUCTIONS = [
    case("sum", lambda T, x: x.sum(), a(2, 3)),
    case("sum_fn", lambda T, x: T.sum(x), a(2, 3, 4)),
    case("sum_dim", lambda T, x: x.sum(1), a(2, 3, 4)),
    case("sum_neg_dim_keepdim", lambda T, x: x.sum(-1, keepdim=True), a(2, 3, 4)),
    case("sum_tuple", lambda T, x: T.sum(x, (0, 2)), a(2, 3, 4)),
    case("sum_tuple_keepdim", lambda T, x: x.sum(dim=(0, 1), keepdim=True), a(2, 3, 4)),
    case("sum_0d", lambda T, x: x.sum(), a()),
    case("mean", lambda T, x: x.mean(), a(2, 3)),
    case("mean_fn", lambda T, x: T.mean(x), a(2, 3, 4)),
    case("mean_dim", lambda T, x: x.mean(0), a(2, 3, 4)),
    case("mean_dim_keepdim", lambda T, x: T.mean(x, 2, keepdim=True), a(2, 3, 4)),
    case("mean_tuple", lambda T, x: x.mean((1, 2)), a(2, 3, 4)),
    case("mean_tuple_keepdim", lambda T, x: x.mean(dim=(0, -1), keepdim=True), a(2, 3, 4)),
    case("max_all", lambda T, x: x.max(), a(3, 4)),
    case("min_all", lambda T, x: T.min(x), a(3, 4)),
    case("max_dim", lambda T, x: x.max(1), a(3, 4)),
    case("max_dim_keepdim", lambda T, x: T.max(x, 0, keepdim=True), a(3, 4)),
    case("max_dim_values", lambda T, x: x.max(dim=-1).values, a(2, 3, 4)),
    case("min_dim", lambda T, x: T.min(x, 1), a(3, 4)),
    case("min_dim_keepdim", lambda T, x: x.min(dim=0, keepdim=True), a(3, 4)),
    case("max_0d", lambda T, x: x.max(), a()),
    case("amax", lambda T, x: x.amax(1), a(3, 4)),
    case("amax_all", lambda T, x: T.amax(x), a(3, 4)),
    case("amax_tuple_keepdim", lambda T, x: T.amax(x, (0, 2), keepdim=True), a(2, 3, 4)),
    case("amin", lambda T, x: T.amin(x, 0), a(3, 4)),
    case("amin_tuple", lambda T, x: x.amin(dim=(1, 2)), a(2, 3, 4)),
    case("amin_keepdim", lambda T, x: x.amin(-1, keepdim=True), a(3, 4)),
    case("prod", lambda T, x: x.prod(), a(2, 3)),
    case("prod_fn", lambda T, x: T.prod(x), a(2, 3)),
    case("prod_dim", lambda T, x: x.prod(1), a(2, 3)),
    case("prod_dim_keepdim", lambda T, x: T.prod(x, 0, keepdim=True), a(2, 3)),
    case("prod_one_zero", lambda T, x: x.prod(), ONE_ZERO),
    case("prod_two_zeros", lambda T, x: x.prod(), TWO_ZEROS),
    case("prod_dim_one_zero", lambda T, x: x.prod(1), ONE_ZERO),
    case("prod_dim_two_zeros", lambda T, x: x.prod(1), TWO_ZEROS),
    case("prod_dim0_zeros", lambda T, x: T.prod(x, 0), TWO_ZEROS),
    case("prod_0d", lambda T, x: x.prod(), a()),
    case("var", lambda T, x: x.var(), a(3, 4)),
    case("var_dim", lambda T, x: T.var(x, 1), a(3, 4)),
    case("var_correction_0", lambda T, x: x.var(0, correction=0), a(3, 4)),
    case("var_unbiased_false", lambda T, x: T.var(x, 1, unbiased=False), a(3, 4)),
    case("var_tuple_keepdim", lambda T, x: x.var(dim=(0, 2), keepdim=True), a(2, 3, 4)),
    case("std", lambda T, x: x.std(), a(3, 4)),
    case("std_dim", lambda T, x: T.std(x, 0), a(3, 4)),
    case("std_unbiased_false", lambda T, x: x.std(1, unbiased=False), a(3, 4)),
    case("std_correction_2_keepdim", lambda T, x: T.std(x, dim=1, correction=2, keepdim=True),
         a(3, 4)),
    case("cumsum", lambda T, x: x.cumsum(0), a(3, 4)),
    case("cumsum_last", lambda T, x: T.cumsum(x, -1), a(2, 3, 4)),
    case("cumprod", lambda T, x: x.cumprod(0), a(3, 4)),
    case("cumprod_last", lambda T, x: T.cumprod(x, -1), a(2, 3, 4)),
    case("cumprod_one_zero", lambda T, x: x.cumprod(1), ONE_ZERO),
    case("cumprod_two_zeros", lambda T, x: x.cumprod(1), TWO_ZEROS),
    case("cumprod_dim0_zeros", lambda T, x: T.cumprod(x, dim=0), TWO_ZEROS),
    case("cumprod_0d", lambda T, x: x.cumprod(0), a()),
    case("sort", lambda T, x: x.sort(), a(3, 4)),
    case("sort_dim_descending", lambda T, x: T.sort(x, 0, descending=True), a(3, 4)),
    case("sort_stable", lambda T, x: x.sort(dim=1, stable=True), a(3, 4)),
    case("sort_values", lambda T, x: x.sort(-1).values * 2, a(2, 3, 4)),
    case("logsumexp", lambda T, x: x.logsumexp(1), a(3, 4)),
    case("logsumexp_fn_tuple", lambda T, x: T.logsumexp(x, (0, 2)), a(2, 3, 4)),
    case("logsumexp_keepdim", lambda T, x: x.logsumexp(0, keepdim=True), a(3, 4)),
    case("softmax", lambda T, x: x.softmax(1), a(3, 4)),
    case("softmax_fn", lambda T, x: T.softmax(x, 0), a(3, 4)),
    case("softmax_nn", lambda T, x: T.nn.functional.softmax(x, dim=-1), a(2, 3, 4)),
    case("log_softmax", lambda T, x: x.log_softmax(1), a(3, 4)),
    case("log_softmax_fn", lambda T, x: T.log_softmax(x, 0), a(2, 3, 4)),
    case("log_softmax_nn", lambda T, x: T.nn.functional.log_softmax(x, dim=-1), a(3, 4)),
]

# ---------------------------------------------------------------------------------- products
MATMUL = [
    case("matmul_1x1", lambda T, x, y: x @ y, a(4), a(4)),
    case("matmul_1x2", lambda T, x, y: T.matmul(x, y), a(4), a(4, 3)),
    case("matmul_2x1", lambda T, x, y: x.matmul(y), a(3, 4), a(4)),
    case("matmul_2x2", lambda T, x, y: x @ y, a(3, 4), a(4, 2)),
    case("matmul_2x2_first_dual", lambda T, x, y: x @ y, a(3, 4), a(4, 2), dual=(0,)),
    case("matmul_2x2_second_dual", lambda T, x, y: x @ y, a(3, 4), a(4, 2), dual=(1,)),
    case("matmul_1x3", lambda T, x, y: x @ y, a(4), a(2, 4, 3)),
    case("matmul_3x1", lambda T, x, y: x @ y, a(2, 3, 4), a(4)),
    case("matmul_2x3", lambda T, x, y: x @ y, a(3, 4), a(2, 4, 2)),
    case("matmul_3x2", lambda T, x, y: T.matmul(x, y), a(2, 3, 4), a(4, 2)),
    case("matmul_3x3", lambda T, x, y: x @ y, a(2, 3, 4), a(2, 4, 2)),
    case("matmul_4x3_broadcast", lambda T, x, y: x @ y, a(2, 1, 3, 4), a(5, 4, 2)),
    case("matmul_4x1", lambda T, x, y: x @ y, a(2, 2, 3, 4), a(4)),
    case("matmul_transposed", lambda T, x, y: x.t() @ y, a(4, 3), a(4, 2)),
    case("mm", lambda T, x, y: T.mm(x, y), a(3, 4), a(4, 2)),
    case("mm_method_second_dual", lambda T, x, y: x.mm(y), a(3, 4), a(4, 2), dual=(1,)),
    case("mv", lambda T, x, y: T.mv(x, y), a(3, 4), a(4)),
    case("mv_method_first_dual", lambda T, x, y: x.mv(y), a(3, 4), a(4), dual=(0,)),
    case("dot", lambda T, x, y: T.dot(x, y), a(4), a(4)),
    case("dot_method_second_dual", lambda T, x, y: x.dot(y), a(4), a(4), dual=(1,)),
    case("bmm", lambda T, x, y: T.bmm(x, y), a(2, 3, 4), a(2, 4, 2)),
    case("bmm_method_first_dual", lambda T, x, y: x.bmm(y), a(2, 3, 4), a(2, 4, 2), dual=(0,)),
    case("addmm", lambda T, b, x, y: T.addmm(b, x, y), a(3, 2), a(3, 4), a(4, 2)),
    case("addmm_bias_1d", lambda T, b, x, y: T.addmm(b, x, y), a(2), a(3, 4), a(4, 2)),
    case("addmm_beta_alpha", lambda T, b, x, y: T.addmm(b, x, y, beta=0.5, alpha=2.0),
         a(3, 2), a(3, 4), a(4, 2)),
    case("addmm_bias_dual_only", lambda T, b, x, y: b.addmm(x, y), a(3, 2), a(3, 4), a(4, 2),
         dual=(0,)),
    case("addmm_mat_dual_only", lambda T, b, x, y: T.addmm(b, x, y, alpha=3), a(1, 2),
         a(3, 4), a(4, 2), dual=(1, 2)),
]

# ---------------------------------------------------------------------------------- shapes
SHAPES = [
    case("view", lambda T, x: x.view(6), a(2, 3)),
    case("view_2d", lambda T, x: x.view(3, 2), a(2, 3)),
    case("view_infer", lambda T, x: x.view(-1, 2), a(2, 3, 2)),
    case("view_as", lambda T, x, y: x.view_as(y), a(2, 3), a(3, 2), dual=(0,)),
    case("reshape", lambda T, x: x.reshape(3, 2), a(2, 3)),
    case("reshape_fn", lambda T, x: T.reshape(x, (-1,)), a(2, 3, 2)),
    case("reshape_non_contiguous", lambda T, x: x.t().reshape(6), a(2, 3)),
    case("reshape_non_contiguous_3d", lambda T, x: x.permute(2, 0, 1).reshape(4, -1),
         a(2, 3, 4)),
    case("reshape_as", lambda T, x, y: x.reshape_as(y), a(2, 3), a(6), dual=(0,)),
    case("t", lambda T, x: x.t(), a(2, 3)),
    case("t_fn", lambda T, x: T.t(x), a(2, 3)),
    case("T_property", lambda T, x: x.T, a(2, 3)),
    case("mT", lambda T, x: x.mT, a(2, 3, 4)),
    case("t_1d", lambda T, x: x.t(), a(3)),
    case("transpose", lambda T, x: x.transpose(0, 2), a(2, 3, 4)),
    case("transpose_fn", lambda T, x: T.transpose(x, -1, 1), a(2, 3, 4)),
    case("permute", lambda T, x: x.permute(2, 0, 1), a(2, 3, 4)),
    case("permute_fn", lambda T, x: T.permute(x, (1, 2, 0)), a(2, 3, 4)),
    case("flatten", lambda T, x: x.flatten(), a(2, 3, 4)),
    case("flatten_start", lambda T, x: x.flatten(1), a(2, 3, 4)),
    case("flatten_fn_range", lambda T, x: T.flatten(x, 0, 1), a(2, 3, 4)),
    case("flatten_non_contiguous", lambda T, x: x.transpose(0, 1).flatten(), a(2, 3, 4)),
    case("squeeze", lambda T, x: x.squeeze(), a(2, 1, 3, 1)),
    case("squeeze_dim", lambda T, x: x.squeeze(1), a(2, 1, 3)),
    case("squeeze_fn_dim", lambda T, x: T.squeeze(x, -1), a(2, 3, 1)),
    case("squeeze_noop", lambda T, x: x.squeeze(0), a(2, 3)),
    case("unsqueeze", lambda T, x: x.unsqueeze(0), a(2, 3)),
    case("unsqueeze_fn_last", lambda T, x: T.unsqueeze(x, -1), a(2, 3)),
    case("expand", lambda T, x: x.expand(4, 2, 3), a(2, 3)),
    case("expand_infer", lambda T, x: x.expand(-1, 3), a(2, 1)),
    case("expand_as", lambda T, x, y: x.expand_as(y), a(3), a(2, 3), dual=(0,)),
    case("expand_then_sum", lambda T, x: x.expand(3, 2).sum(0), a(2)),
    case("clone", lambda T, x: x.clone(), a(2, 3)),
    case("clone_fn", lambda T, x: T.clone(x), a(2, 3)),
    case("contiguous", lambda T, x: x.t().contiguous(), a(2, 3)),
    case("contiguous_noop", lambda T, x: x.contiguous(), a(2, 3)),
    case("to_float32", lambda T, x: x.to(T.float32), QUANT, eps=2.0 ** -10, exact=True),
    case("float", lambda T, x: x.float(), QUANT, eps=2.0 ** -10, exact=True),
    case("to_float32_and_back", lambda T, x: x.to(T.float32).to(T.float64) * 3, QUANT,
         eps=2.0 ** -10, exact=True),
    case("to_float64_from_float32", lambda T, x: x.double(), QUANT.astype(np.float32),
         eps=2.0 ** -10, exact=True),
    case("to_same_dtype", lambda T, x: x.to(T.float64), a(2, 3)),
    case("type_as", lambda T, x, y: x.type_as(y), a(2, 3), a(2), dual=(0,)),
    case("cat", lambda T, x, y: T.cat([x, y]), a(2, 3), a(1, 3)),
    case("cat_dim1", lambda T, x, y: T.cat((x, y), dim=1), a(2, 3), a(2, 2)),
    case("cat_first_dual", lambda T, x, y: T.cat([x, y], -1), a(2, 3), a(2, 2), dual=(0,)),
    case("cat_second_dual", lambda T, x, y: T.cat([x, y]), a(2, 3), a(1, 3), dual=(1,)),
    case("cat_three", lambda T, x, y, z: T.cat([x, y, z], 1), a(2, 1), a(2, 3), a(2, 2),
         dual=(0, 2)),
    case("concat", lambda T, x, y: T.concat([x, y]), a(2), a(3)),
    case("stack", lambda T, x, y: T.stack([x, y]), a(2, 3), a(2, 3)),
    case("stack_last", lambda T, x, y: T.stack((x, y), dim=-1), a(2, 3), a(2, 3)),
    case("stack_second_dual", lambda T, x, y: T.stack([x, y], 1), a(2, 3), a(2, 3), dual=(1,)),
    case("split", lambda T, x: x.split(2), a(5, 3)),
    case("split_sizes", lambda T, x: T.split(x, [1, 2], dim=1), a(2, 3)),
    case("split_with_sizes", lambda T, x: x.split_with_sizes([3, 1, 1]), a(5, 2)),
    case("chunk", lambda T, x: x.chunk(2), a(4, 3)),
    case("chunk_dim_uneven", lambda T, x: T.chunk(x, 2, dim=1), a(2, 5)),
    case("unbind", lambda T, x: x.unbind(), a(3, 2)),
    case("unbind_dim", lambda T, x: T.unbind(x, 1), a(2, 3)),
    case("select", lambda T, x: x.select(1, 2), a(2, 3, 4)),
    case("select_fn_neg", lambda T, x: T.select(x, 0, -1), a(2, 3)),
]

# ---------------------------------------------------------------------------------- indexing
INDEXING = [
    case("int", lambda T, x: x[1], a(3, 4)),
    case("neg_int", lambda T, x: x[-1], a(3, 4)),
    case("int_int", lambda T, x: x[1, 2], a(3, 4)),
    case("slice", lambda T, x: x[1:3], a(4, 3)),
    case("slice_step", lambda T, x: x[::2, 1:], a(5, 3)),
    case("column", lambda T, x: x[:, 1], a(3, 4)),
    case("none", lambda T, x: x[None], a(3, 4)),
    case("none_slice", lambda T, x: x[:, None, 1:], a(3, 4)),
    case("ellipsis", lambda T, x: x[..., 0], a(2, 3, 4)),
    case("mask", lambda T, x: x[T.tensor(MASK)], a(2, 3)),
    case("row_mask", lambda T, x: x[T.tensor(np.array([True, False, True]))], a(3, 4)),
    case("index_tensor", lambda T, x: x[idx(T, [2, 0, 2])], a(3, 4)),
    case("index_tensor_2d", lambda T, x: x[idx(T, [[0, 1], [2, 0]])], a(3, 4)),
    case("index_list", lambda T, x: x[[0, 2]], a(3, 4)),
    case("index_then_slice", lambda T, x: x[idx(T, [1, 0]), 1:], a(3, 4)),
    case("int_then_index", lambda T, x: x[1, idx(T, [3, 0, 3])], a(3, 4)),
    case("two_index_tensors", lambda T, x: x[idx(T, [0, 2, 1]), idx(T, [3, 3, 0])], a(3, 4)),
    case("slice_then_index", lambda T, x: x[1:, idx(T, [0, 0, 2])], a(3, 4)),
    case("none_and_index", lambda T, x: x[None, idx(T, [1, 2])], a(3, 4)),
    case("mask_of_x", lambda T, x: x[x > 0], a(3, 4)),
    case("index_of_view", lambda T, x: x.t()[idx(T, [1, 3])], a(3, 4)),
    case("index_select", lambda T, x: x.index_select(0, idx(T, [2, 0, 2])), a(3, 4)),
    case("index_select_fn", lambda T, x: T.index_select(x, 1, idx(T, [3, 1])), a(3, 4)),
    case("gather", lambda T, x: x.gather(1, idx(T, [[0, 0], [3, 1], [2, 2]])), a(3, 4)),
    case("gather_fn", lambda T, x: T.gather(x, 0, idx(T, [[2, 0, 1, 1]])), a(3, 4)),
    case("scatter", lambda T, x, s: x.scatter(1, idx(T, [[0, 2], [3, 1], [1, 0]]), s),
         a(3, 4), a(3, 2)),
    case("scatter_x_dual", lambda T, x, s: T.scatter(x, 0, idx(T, [[2, 0, 1, 1]]), s),
         a(3, 4), a(1, 4), dual=(0,)),
    case("scatter_src_dual", lambda T, x, s: x.scatter(1, idx(T, [[0, 2], [3, 1], [1, 0]]), s),
         a(3, 4), a(3, 2), dual=(1,)),
    case("scatter_larger_src", lambda T, x, s: x.scatter(1, idx(T, [[1], [0], [3]]), s),
         a(3, 4), a(3, 3)),
    case("scatter_value", lambda T, x: x.scatter(1, idx(T, [[0, 2], [3, 1], [1, 0]]), 2.5),
         a(3, 4)),
]


# ---------------------------------------------------------------------------------- in place
def _setitem(key, value=5.0):
    def fn(T, x, *rest):
        y = x * 1
        y[key(T) if callable(key) else key] = rest[0] if rest else value
        return y

    return fn


def _view_then(op):
    def fn(T, x, *rest):
        y = x * 1
        op(T, y, *rest)
        return y

    return fn


def _iadd(T, x, y):
    x += y
    return x


def _imul(T, x):
    x *= 2
    return x


INPLACE = [
    case("mul_", lambda T, x: x.mul_(2), a(2, 3)),
    case("mul_float_", lambda T, x: x.mul_(2.5), a(2, 3)),
    case("mul_tensor_", lambda T, x, y: x.mul_(y), a(2, 3), a(2, 3)),
    case("mul_tensor_other_dual_", lambda T, x, y: x.mul_(y), a(2, 3), a(3), dual=(1,)),
    case("add_", lambda T, x, y: x.add_(y), a(2, 3), a(2, 3)),
    case("add_alpha_", lambda T, x, y: x.add_(y, alpha=2), a(2, 3), a(3)),
    case("add_into_plain_", lambda T, x, y: x.add_(y), a(2, 3), a(2, 3), dual=(1,)),
    case("sub_", lambda T, x, y: x.sub_(y), a(2, 3), a(2, 3)),
    case("div_", lambda T, x: x.div_(3), a(2, 3)),
    case("div_float_", lambda T, x: x.div_(4.0), a(2, 3)),
    case("div_tensor_", lambda T, x, y: x.div_(y), a(2, 3), a(2, 3)),
    case("pow_", lambda T, x: x.pow_(2), a(2, 3)),
    case("neg_", lambda T, x: x.neg_(), a(2, 3)),
    case("exp_", lambda T, x: x.exp_(), a(2, 3)),
    case("log_", lambda T, x: x.log_(), p(2, 3)),
    case("sin_", lambda T, x: x.sin_(), a(2, 3)),
    case("tanh_", lambda T, x: x.tanh_(), a(2, 3)),
    case("sigmoid_", lambda T, x: x.sigmoid_(), a(2, 3)),
    case("sqrt_", lambda T, x: x.sqrt_(), p(2, 3)),
    case("relu_", lambda T, x: x.relu_(), a(2, 3)),
    case("abs_", lambda T, x: x.abs_(), a(2, 3)),
    case("reciprocal_", lambda T, x: x.reciprocal_(), a(2, 3)),
    case("clamp_", lambda T, x: x.clamp_(-0.5, 1.0), CLAMP_X),
    case("clamp_min_", lambda T, x: x.clamp_min_(0.2), CLAMP_X),
    case("floor_", lambda T, x: x.floor_(), a(2, 3)),
    case("zero_", lambda T, x: x.zero_(), a(2, 3)),
    case("fill_", lambda T, x: x.fill_(1.5), a(2, 3)),
    case("fill_tensor_", lambda T, x, v: x.fill_(v), a(2, 3), a()),
    case("fill_tensor_plain_", lambda T, x, v: x.fill_(v), a(2, 3), a(), dual=(1,)),
    case("copy_", lambda T, x, y: x.copy_(y), a(2, 3), a(2, 3)),
    case("copy_into_plain_", lambda T, x, y: x.copy_(y), a(2, 3), a(3), dual=(1,)),
    case("copy_from_plain_", lambda T, x, y: x.copy_(y), a(2, 3), a(2, 3), dual=(0,)),
    case("iadd", _iadd, a(2, 3), a(2, 3)),
    case("imul", _imul, a(2, 3)),
    case("chain_", lambda T, x: x.mul_(2).exp_().add_(1), a(2, 3)),
    case("op_after_", lambda T, x: x.mul_(3).sum(0), a(2, 3)),
    case("setitem_int", _setitem(0), a(3)),
    case("setitem_row", _setitem(1), a(3, 4)),
    case("setitem_slice", _setitem((slice(None), slice(1, 3))), a(3, 4)),
    case("setitem_mask", _setitem(lambda T: T.tensor(MASK), 0.0), a(2, 3)),
    case("setitem_index", _setitem(lambda T: idx(T, [2, 0])), a(3, 4)),
    case("setitem_dual_value", _setitem(0), a(3, 4), a(4)),
    case("setitem_dual_value_only", _setitem(0), a(3, 4), a(4), dual=(1,)),
    case("setitem_slice_dual_value", _setitem(slice(1, None)), a(3, 4), a(2, 4)),
    case("setitem_broadcast_value", _setitem((slice(None), 1)), a(3, 4), a()),
    case("setitem_index_dual_value", _setitem(lambda T: idx(T, [2, 0])), a(3, 4), a(2, 4)),
    case("setitem_mask_dual_value", _setitem(lambda T: T.tensor(MASK)), a(2, 3), a(3)),
    case("index_put_", lambda T, x, v: x.index_put_((idx(T, [2, 0]),), v), a(3, 4), a(2, 4)),
    case("index_put_accumulate", lambda T, x, v: x.index_put((idx(T, [2, 0, 2]),), v,
                                                             accumulate=True),
         a(3, 4), a(3, 4)),
    case("index_put_fn", lambda T, x, v: T.index_put(x, (idx(T, [1]), idx(T, [3])), v),
         a(3, 4), a(1)),
    case("inplace_on_view", _view_then(lambda T, y: y[0].mul_(3)), a(3, 4)),
    case("inplace_on_transposed_view", _view_then(lambda T, y, z: y.t().add_(z)),
         a(3, 4), a(4, 3)),
    case("inplace_on_view_plain_base", lambda T, x, z: _plain_base(T, x, z), a(3, 4), a(4),
         dual=(1,)),
    case("view_sees_base_inplace", lambda T, x: _view_of_changed_base(T, x), a(3, 4)),
]


def _plain_base(T, x, z):
    """A plain (non-dual) tensor whose row is overwritten in place by a dual."""
    y = x * 1
    y[1].copy_(z)
    return y


def _view_of_changed_base(T, x):
    y = x * 1
    row = y[1]
    y.mul_(2)
    return row, y


# ---------------------------------------------------------------------------------- nn.functional
F_TARGET = np.array([2, 0, 1, 2])
F_WEIGHT = np.array([0.5, 2.0, 1.5])


def _f(T):
    return T.nn.functional


def _target(T, values=F_TARGET):
    return T.tensor(np.array(values))


NN = [
    case("linear", lambda T, x, w, b: _f(T).linear(x, w, b), a(4, 3), a(2, 3), a(2)),
    case("linear_no_bias", lambda T, x, w: _f(T).linear(x, w), a(4, 3), a(2, 3)),
    case("linear_input_dual", lambda T, x, w, b: _f(T).linear(x, w, b), a(4, 3), a(2, 3), a(2),
         dual=(0,)),
    case("linear_params_dual", lambda T, x, w, b: _f(T).linear(x, w, b), a(4, 3), a(2, 3), a(2),
         dual=(1, 2)),
    case("linear_1d", lambda T, x, w, b: _f(T).linear(x, w, b), a(3), a(2, 3), a(2)),
    case("linear_3d", lambda T, x, w, b: _f(T).linear(x, w, b), a(2, 4, 3), a(2, 3), a(2)),
    case("mse_loss", lambda T, x, y: _f(T).mse_loss(x, y), a(2, 3), a(2, 3)),
    case("mse_loss_sum", lambda T, x, y: _f(T).mse_loss(x, y, reduction="sum"), a(2, 3), a(2, 3)),
    case("mse_loss_none", lambda T, x, y: _f(T).mse_loss(x, y, reduction="none"),
         a(2, 3), a(2, 3)),
    case("mse_loss_input_dual", lambda T, x, y: _f(T).mse_loss(x, y), a(2, 3), a(2, 3),
         dual=(0,)),
    case("mse_loss_target_dual", lambda T, x, y: _f(T).mse_loss(x, y, reduction="sum"),
         a(2, 3), a(2, 3), dual=(1,)),
    case("nll_loss", lambda T, x: _f(T).nll_loss(x, _target(T)), a(4, 3)),
    case("nll_loss_sum", lambda T, x: _f(T).nll_loss(x, _target(T), reduction="sum"), a(4, 3)),
    case("nll_loss_none", lambda T, x: _f(T).nll_loss(x, _target(T), reduction="none"), a(4, 3)),
    case("nll_loss_weight", lambda T, x: _f(T).nll_loss(x, _target(T), T.tensor(F_WEIGHT)),
         a(4, 3)),
    case("nll_loss_weight_none", lambda T, x: _f(T).nll_loss(
        x, _target(T), T.tensor(F_WEIGHT), reduction="none"), a(4, 3)),
    case("nll_loss_ignore_index", lambda T, x: _f(T).nll_loss(x, _target(T), ignore_index=2),
         a(4, 3)),
    case("nll_loss_1d", lambda T, x: _f(T).nll_loss(x, _target(T, 1)), a(3)),
    case("nll_loss_of_log_softmax", lambda T, x: _f(T).nll_loss(x.log_softmax(1), _target(T)),
         a(4, 3)),
    case("cross_entropy", lambda T, x: _f(T).cross_entropy(x, _target(T)), a(4, 3)),
    case("cross_entropy_sum", lambda T, x: _f(T).cross_entropy(x, _target(T), reduction="sum"),
         a(4, 3)),
    case("cross_entropy_none", lambda T, x: _f(T).cross_entropy(
        x, _target(T), reduction="none"), a(4, 3)),
    case("cross_entropy_weight", lambda T, x: _f(T).cross_entropy(
        x, _target(T), T.tensor(F_WEIGHT)), a(4, 3)),
    case("cross_entropy_ignore_index", lambda T, x: _f(T).cross_entropy(
        x, _target(T), ignore_index=0), a(4, 3)),
    case("cross_entropy_1d", lambda T, x: _f(T).cross_entropy(x, _target(T, 2)), a(3)),
    case("cross_entropy_label_smoothing", lambda T, x: _f(T).cross_entropy(
        x, _target(T), label_smoothing=0.1), a(4, 3)),
    case("cross_entropy_label_smoothing_sum", lambda T, x: _f(T).cross_entropy(
        x, _target(T), reduction="sum", label_smoothing=0.2), a(4, 3)),
    case("cross_entropy_label_smoothing_none", lambda T, x: _f(T).cross_entropy(
        x, _target(T), reduction="none", label_smoothing=0.3), a(4, 3)),
    case("cross_entropy_label_smoothing_weight", lambda T, x: _f(T).cross_entropy(
        x, _target(T), T.tensor(F_WEIGHT), label_smoothing=0.1), a(4, 3)),
    case("cross_entropy_label_smoothing_ignore", lambda T, x: _f(T).cross_entropy(
        x, _target(T), ignore_index=1, label_smoothing=0.1), a(4, 3)),
    case("cross_entropy_probabilities", lambda T, x, y: _f(T).cross_entropy(x, y.softmax(1)),
         a(4, 3), a(4, 3)),
    case("cross_entropy_probabilities_smoothing", lambda T, x, y: _f(T).cross_entropy(
        x, y.softmax(1), label_smoothing=0.2, reduction="sum"), a(4, 3), a(4, 3)),
]


@pytest.mark.parametrize("fn, specs, dual, kw", ARITHMETIC)
def test_arithmetic(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", UNARY)
def test_unary(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", SELECTION)
def test_selection(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", REDUCTIONS)
def test_reduction(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", MATMUL)
def test_matmul(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", SHAPES)
def test_shape(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", INDEXING)
def test_indexing(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", INPLACE)
def test_inplace(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", NN)
def test_nn_functional(T, rng, fn, specs, dual, kw):
    run_cases(T, rng, fn, specs, dual, kw)


@pytest.mark.parametrize("fn, specs, dual, kw", INDEXING + MATMUL)
def test_primal_requires_grad(T, rng, fn, specs, dual, kw):
    """The same tangents when the primals are leaves that require grad (a recorded graph)."""
    run_cases(T, rng, fn, specs, dual, kw, requires_grad=True)
