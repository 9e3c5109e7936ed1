"""Elementary tensor ops: forward values against NumPy, gradcheck and gradgradcheck in
float64, result dtypes for int and bool inputs, and error messages.

Node names and saved fields are in test_ops_names.py, gradient values in test_ops_grads.py.
Every test runs on ``ext`` and on ``torch``; the expectations are torch 2.13's behaviour.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ANY, POS, leaf, sample, to_np


def shape_id(shape):
    return "x".join(map(str, shape)) if shape else "0d"


def pair_id(pair):
    return f"{shape_id(pair[0])}_{shape_id(pair[1])}"


def sigmoid_ref(a):
    return 1.0 / (1.0 + np.exp(-a))


def assert_forward(T, y, ref):
    ref = np.asarray(ref)
    assert tuple(y.shape) == ref.shape
    assert y.dtype == T.float64
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------------------------
# Op tables shared by the forward and gradcheck tests
# --------------------------------------------------------------------------------------------

# id, fn(T, x), NumPy reference, input domain
UNARY = [
    ("neg_op", lambda T, x: -x, lambda a: -a, ANY),
    ("x.neg", lambda T, x: x.neg(), lambda a: -a, ANY),
    ("T.neg", lambda T, x: T.neg(x), lambda a: -a, ANY),
    ("x.abs", lambda T, x: x.abs(), np.abs, ANY),
    ("T.abs", lambda T, x: T.abs(x), np.abs, ANY),
    ("x.exp", lambda T, x: x.exp(), np.exp, ANY),
    ("T.exp", lambda T, x: T.exp(x), np.exp, ANY),
    ("x.log", lambda T, x: x.log(), np.log, POS),
    ("T.log", lambda T, x: T.log(x), np.log, POS),
    ("x.sin", lambda T, x: x.sin(), np.sin, ANY),
    ("T.sin", lambda T, x: T.sin(x), np.sin, ANY),
    ("x.cos", lambda T, x: x.cos(), np.cos, ANY),
    ("T.cos", lambda T, x: T.cos(x), np.cos, ANY),
    ("x.tanh", lambda T, x: x.tanh(), np.tanh, ANY),
    ("T.tanh", lambda T, x: T.tanh(x), np.tanh, ANY),
    ("x.sigmoid", lambda T, x: x.sigmoid(), sigmoid_ref, ANY),
    ("T.sigmoid", lambda T, x: T.sigmoid(x), sigmoid_ref, ANY),
    ("x.relu", lambda T, x: x.relu(), lambda a: np.maximum(a, 0.0), ANY),
    ("T.relu", lambda T, x: T.relu(x), lambda a: np.maximum(a, 0.0), ANY),
    ("x.sqrt", lambda T, x: x.sqrt(), np.sqrt, POS),
    ("T.sqrt", lambda T, x: T.sqrt(x), np.sqrt, POS),
    ("x.clone", lambda T, x: x.clone(), lambda a: a.copy(), ANY),
    ("x+2", lambda T, x: x + 2, lambda a: a + 2, ANY),
    ("2+x", lambda T, x: 2 + x, lambda a: 2 + a, ANY),
    ("x-2.5", lambda T, x: x - 2.5, lambda a: a - 2.5, ANY),
    ("2-x", lambda T, x: 2 - x, lambda a: 2 - a, ANY),
    ("x*2.5", lambda T, x: x * 2.5, lambda a: a * 2.5, ANY),
    ("2*x", lambda T, x: 2 * x, lambda a: 2 * a, ANY),
    ("x/2", lambda T, x: x / 2, lambda a: a / 2, ANY),
    ("2/x", lambda T, x: 2 / x, lambda a: 2 / a, ANY),
    ("x**2", lambda T, x: x**2, lambda a: a**2, ANY),
    ("x**3.0", lambda T, x: x**3.0, lambda a: a**3.0, ANY),
    ("x**-1", lambda T, x: x**-1, lambda a: a**-1.0, ANY),
    ("x**0.5", lambda T, x: x**0.5, np.sqrt, POS),
    ("x.pow_2.5", lambda T, x: x.pow(2.5), lambda a: a**2.5, POS),
    ("2**x", lambda T, x: 2**x, lambda a: 2.0**a, ANY),
    ("2.5**x", lambda T, x: 2.5**x, lambda a: 2.5**a, ANY),
    ("T.pow_2_x", lambda T, x: T.pow(2, x), lambda a: 2.0**a, ANY),
]
UNARY_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in UNARY]

# id, fn(T, a, b), NumPy reference, domain of a, domain of b
BINARY = [
    ("a+b", lambda T, a, b: a + b, np.add, ANY, ANY),
    ("T.add", lambda T, a, b: T.add(a, b), np.add, ANY, ANY),
    ("T.add_alpha2", lambda T, a, b: T.add(a, b, alpha=2), lambda a, b: a + 2 * b, ANY, ANY),
    ("a.add_alpha0.5", lambda T, a, b: a.add(b, alpha=0.5), lambda a, b: a + 0.5 * b, ANY, ANY),
    ("a-b", lambda T, a, b: a - b, np.subtract, ANY, ANY),
    ("T.sub_alpha2", lambda T, a, b: T.sub(a, b, alpha=2), lambda a, b: a - 2 * b, ANY, ANY),
    ("a.sub", lambda T, a, b: a.sub(b), np.subtract, ANY, ANY),
    ("a*b", lambda T, a, b: a * b, np.multiply, ANY, ANY),
    ("T.mul", lambda T, a, b: T.mul(a, b), np.multiply, ANY, ANY),
    ("a/b", lambda T, a, b: a / b, np.divide, ANY, ANY),
    ("T.div", lambda T, a, b: T.div(a, b), np.divide, ANY, ANY),
    ("a**b", lambda T, a, b: a**b, np.power, POS, ANY),
    ("T.pow", lambda T, a, b: T.pow(a, b), np.power, POS, ANY),
]
BINARY_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in BINARY]

# id, fn(T, x), NumPy reference, input shape
SHAPED = [
    ("x.sum", lambda T, x: x.sum(), np.sum, (2, 3)),
    ("x.sum_0d", lambda T, x: x.sum(), np.sum, ()),
    ("T.sum", lambda T, x: T.sum(x), np.sum, (2, 3)),
    ("x.sum_0", lambda T, x: x.sum(0), lambda a: a.sum(0), (2, 3)),
    ("x.sum_dim=-1", lambda T, x: x.sum(dim=-1), lambda a: a.sum(-1), (2, 3)),
    ("x.sum_1_keepdim", lambda T, x: x.sum(1, keepdim=True),
     lambda a: a.sum(1, keepdims=True), (2, 3)),
    ("x.sum_(0,2)", lambda T, x: x.sum((0, 2)), lambda a: a.sum((0, 2)), (2, 1, 3)),
    ("x.sum_(0,-1)_keepdim", lambda T, x: x.sum((0, -1), keepdim=True),
     lambda a: a.sum((0, -1), keepdims=True), (2, 1, 3)),
    ("T.sum_1", lambda T, x: T.sum(x, 1), lambda a: a.sum(1), (2, 3)),
    ("x.sum_0_size1", lambda T, x: x.sum(0), lambda a: a.sum(0), (1,)),
    ("x.mean", lambda T, x: x.mean(), np.mean, (2, 3)),
    ("x.mean_0d", lambda T, x: x.mean(), np.mean, ()),
    ("T.mean", lambda T, x: T.mean(x), np.mean, (2, 3)),
    ("x.mean_0", lambda T, x: x.mean(0), lambda a: a.mean(0), (2, 3)),
    ("x.mean_-1_keepdim", lambda T, x: x.mean(-1, keepdim=True),
     lambda a: a.mean(-1, keepdims=True), (2, 3)),
    ("T.mean_1", lambda T, x: T.mean(x, 1), lambda a: a.mean(1), (2, 3)),
    ("x.mean_0_size1", lambda T, x: x.mean(0), lambda a: a.mean(0), (1, 3)),
    ("x.t", lambda T, x: x.t(), np.transpose, (2, 3)),
    ("x.t_1d", lambda T, x: x.t(), lambda a: a, (3,)),
    ("T.t", lambda T, x: T.t(x), np.transpose, (3, 2)),
    ("x.transpose_0_1", lambda T, x: x.transpose(0, 1), lambda a: a.swapaxes(0, 1), (2, 3)),
    ("x.transpose_-1_0", lambda T, x: x.transpose(-1, 0), lambda a: a.swapaxes(-1, 0),
     (2, 1, 3)),
    ("T.transpose", lambda T, x: T.transpose(x, 1, 2), lambda a: a.swapaxes(1, 2), (2, 1, 3)),
    ("x.reshape_3_2", lambda T, x: x.reshape(3, 2), lambda a: a.reshape(3, 2), (2, 3)),
    ("x.reshape_-1", lambda T, x: x.reshape(-1), lambda a: a.reshape(-1), (2, 3)),
    ("x.reshape_(1,-1)", lambda T, x: x.reshape((1, -1)), lambda a: a.reshape(1, -1), (2, 3)),
    ("T.reshape", lambda T, x: T.reshape(x, (3, 2)), lambda a: a.reshape(3, 2), (6,)),
    ("x.reshape_0d_to_1", lambda T, x: x.reshape(1), lambda a: a.reshape(1), ()),
    ("x.reshape_1_to_0d", lambda T, x: x.reshape(()), lambda a: a.reshape(()), (1,)),
    ("x.reshape_noncontig", lambda T, x: x.t().reshape(6), lambda a: a.T.reshape(6), (2, 3)),
    ("x.view_3_2", lambda T, x: x.view(3, 2), lambda a: a.reshape(3, 2), (2, 3)),
    ("x.view_-1_2", lambda T, x: x.view(-1, 2), lambda a: a.reshape(-1, 2), (2, 3)),
    ("x.view_2_1_3", lambda T, x: x.view(2, 1, 3), lambda a: a.reshape(2, 1, 3), (6,)),
    ("T.clone_2d", lambda T, x: T.clone(x), lambda a: a.copy(), (2, 3)),
]
SHAPED_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in SHAPED]

# id, fn(T, a, b), shape of a, shape of b
MATMUL = [
    ("mat@mat", lambda T, a, b: a @ b, (2, 3), (3, 4)),
    ("mat@vec", lambda T, a, b: a @ b, (2, 3), (3,)),
    ("vec@vec", lambda T, a, b: a @ b, (3,), (3,)),
    ("vec@mat", lambda T, a, b: a @ b, (2,), (2, 3)),
    ("1x1@1x1", lambda T, a, b: a @ b, (1, 1), (1, 1)),
    ("size1_vec@vec", lambda T, a, b: a @ b, (1,), (1,)),
    ("T.matmul", lambda T, a, b: T.matmul(a, b), (3, 2), (2, 2)),
    ("a.matmul_vec", lambda T, a, b: a.matmul(b), (3, 2), (2,)),
    ("T.mm", lambda T, a, b: T.mm(a, b), (2, 3), (3, 2)),
    ("a.mm", lambda T, a, b: a.mm(b), (1, 3), (3, 2)),
]
MATMUL_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in MATMUL]

UNARY_SHAPES = [(), (1,), (5,), (2, 3)]
BINARY_SHAPES = [
    ((), ()),
    ((1,), (1,)),
    ((4,), (4,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1, 1), (3,)),
]


# --------------------------------------------------------------------------------------------
# Forward values against NumPy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=shape_id)
@pytest.mark.parametrize("fn,ref,domain", UNARY_PARAMS)
def test_unary_forward(T, rng, fn, ref, domain, shape):
    a = sample(rng, shape, domain)
    assert_forward(T, fn(T, T.tensor(a)), ref(a))


@pytest.mark.parametrize("shapes", BINARY_SHAPES, ids=pair_id)
@pytest.mark.parametrize("fn,ref,dom_a,dom_b", BINARY_PARAMS)
def test_binary_forward(T, rng, fn, ref, dom_a, dom_b, shapes):
    a, b = sample(rng, shapes[0], dom_a), sample(rng, shapes[1], dom_b)
    assert_forward(T, fn(T, T.tensor(a), T.tensor(b)), ref(a, b))


@pytest.mark.parametrize("fn,ref,shape", SHAPED_PARAMS)
def test_shaped_forward(T, rng, fn, ref, shape):
    a = sample(rng, shape)
    assert_forward(T, fn(T, T.tensor(a)), ref(a))


@pytest.mark.parametrize("fn,shape_a,shape_b", MATMUL_PARAMS)
def test_matmul_forward(T, rng, fn, shape_a, shape_b):
    a, b = sample(rng, shape_a), sample(rng, shape_b)
    assert_forward(T, fn(T, T.tensor(a), T.tensor(b)), a @ b)


@pytest.mark.parametrize(
    "src,convert,dst",
    [
        pytest.param(np.float64, lambda T, t: t.to(T.float32), np.float32, id="to_float32"),
        pytest.param(np.float64, lambda T, t: t.float(), np.float32, id="float"),
        pytest.param(np.float32, lambda T, t: t.double(), np.float64, id="double"),
        pytest.param(np.float32, lambda T, t: t.to(T.float64), np.float64, id="to_float64"),
    ],
)
def test_dtype_conversion_forward(T, rng, src, convert, dst):
    a = sample(rng, (2, 3), dtype=src)
    y = convert(T, T.tensor(a))
    assert y.dtype == getattr(T, np.dtype(dst).name)
    assert tuple(y.shape) == (2, 3)
    out = to_np(y)
    assert out.dtype == dst
    np.testing.assert_array_equal(out, a.astype(dst))


# --------------------------------------------------------------------------------------------
# gradcheck and gradgradcheck in float64
# --------------------------------------------------------------------------------------------


def check_grads(T, fn, *arrays):
    inputs = tuple(leaf(T, a) for a in arrays)
    assert T.autograd.gradcheck(fn, inputs)
    assert T.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("shape", [(), (2, 3)], ids=shape_id)
@pytest.mark.parametrize("fn,ref,domain", UNARY_PARAMS)
def test_unary_gradcheck(T, rng, fn, ref, domain, shape):
    check_grads(T, lambda x: fn(T, x), sample(rng, shape, domain))


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((), (2, 3)), ((2, 1), (1, 3))], ids=pair_id)
@pytest.mark.parametrize("fn,ref,dom_a,dom_b", BINARY_PARAMS)
def test_binary_gradcheck(T, rng, fn, ref, dom_a, dom_b, shapes):
    a, b = sample(rng, shapes[0], dom_a), sample(rng, shapes[1], dom_b)
    check_grads(T, lambda x, y: fn(T, x, y), a, b)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x, c: x * c, id="x*const"),
        pytest.param(lambda T, x, c: c / x, id="const/x"),
        pytest.param(lambda T, x, c: x**c, id="x**const"),
        pytest.param(lambda T, x, c: c**x, id="const**x"),
        pytest.param(lambda T, x, c: T.sub(c, x, alpha=3), id="T.sub_const_x_alpha3"),
    ],
)
def test_gradcheck_with_constant_operand(T, rng, fn):
    c = T.tensor(sample(rng, (3,), POS))
    check_grads(T, lambda x: fn(T, x, c), sample(rng, (2, 3), POS))


@pytest.mark.parametrize("fn,ref,shape", SHAPED_PARAMS)
def test_shaped_gradcheck(T, rng, fn, ref, shape):
    check_grads(T, lambda x: fn(T, x), sample(rng, shape))


@pytest.mark.parametrize("fn,shape_a,shape_b", MATMUL_PARAMS)
def test_matmul_gradcheck(T, rng, fn, shape_a, shape_b):
    check_grads(T, lambda a, b: fn(T, a, b), sample(rng, shape_a), sample(rng, shape_b))

# --------------------------------------------------------------------------------------------
# Integer and bool inputs; error messages
# --------------------------------------------------------------------------------------------

INT64 = np.array([1, 2, 3], dtype=np.int64)
INT32 = np.array([1, 2, 3], dtype=np.int32)
BOOL = np.array([True, False, True])

# id, fn(T, x), input, result dtype, NumPy reference
INT_DTYPE_CASES = [
    ("exp_int64", lambda T, x: x.exp(), INT64, "float32", np.exp),
    ("T.exp_int32", lambda T, x: T.exp(x), INT32, "float32", np.exp),
    ("sin_int64", lambda T, x: x.sin(), INT64, "float32", np.sin),
    ("sqrt_int64", lambda T, x: x.sqrt(), INT64, "float32", np.sqrt),
    ("sigmoid_int64", lambda T, x: T.sigmoid(x), INT64, "float32", sigmoid_ref),
    ("log_int64", lambda T, x: x.log(), INT64, "float32", np.log),
    ("tanh_int64", lambda T, x: x.tanh(), INT64, "float32", np.tanh),
    ("exp_bool", lambda T, x: x.exp(), BOOL, "float32", lambda a: np.exp(a.astype(float))),
    ("sum_int64", lambda T, x: x.sum(), INT64, "int64", np.sum),
    ("sum_int32", lambda T, x: x.sum(), INT32, "int64", np.sum),
    ("sum_0_int32", lambda T, x: x.sum(0), INT32, "int64", lambda a: a.sum(0)),
    ("sum_bool", lambda T, x: x.sum(), BOOL, "int64", np.sum),
    ("neg_int64", lambda T, x: -x, INT64, "int64", np.negative),
    ("abs_int32", lambda T, x: x.abs(), INT32, "int32", np.abs),
    ("relu_int64", lambda T, x: x.relu(), INT64, "int64", lambda a: np.maximum(a, 0)),
    ("int64+int64", lambda T, x: x + x, INT64, "int64", lambda a: a + a),
    ("int64+int32", lambda T, x: x + T.tensor(INT32), INT64, "int64", lambda a: a + INT32),
    ("int64*2", lambda T, x: x * 2, INT64, "int64", lambda a: a * 2),
    ("int64*2.5", lambda T, x: x * 2.5, INT64, "float32", lambda a: a * 2.5),
    ("int64/2", lambda T, x: x / 2, INT64, "float32", lambda a: a / 2),
    ("int64/int64", lambda T, x: x / x, INT64, "float32", lambda a: a / a),
    ("int64**2", lambda T, x: x**2, INT64, "int64", lambda a: a**2),
    ("2**int64", lambda T, x: 2**x, INT64, "int64", lambda a: 2**a),
    ("int64**0.5", lambda T, x: x**0.5, INT64, "float32", np.sqrt),
]


@pytest.mark.parametrize(
    "fn,array,dtype,ref", [pytest.param(*r[1:], id=r[0]) for r in INT_DTYPE_CASES]
)
def test_int_and_bool_result_dtype(T, fn, array, dtype, ref):
    y = fn(T, T.tensor(array))
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_allclose(to_np(y), ref(array), rtol=1e-6)


def test_int_tensor_dtypes_from_numpy(T):
    assert T.tensor(INT64).dtype == T.int64
    assert T.tensor(INT32).dtype == T.int32
    assert T.tensor(BOOL).dtype == T.bool


def f64(*shape):
    return np.zeros(shape, dtype=np.float64)


# id, fn(T), exception type, message fragment (None: only the type is pinned)
ERROR_CASES = [
    ("mean_int64", lambda T: T.tensor(INT64).mean(), RuntimeError, None),
    ("mean_0_int32", lambda T: T.tensor(INT32).mean(0), RuntimeError, None),
    ("mean_bool", lambda T: T.tensor(BOOL).mean(), RuntimeError, None),
    ("neg_bool", lambda T: -T.tensor(BOOL), RuntimeError, None),
    ("add_no_broadcast", lambda T: T.tensor(f64(2, 3)) + T.tensor(f64(4)), RuntimeError,
     "must match the size"),
    ("mul_no_broadcast", lambda T: T.tensor(f64(2, 3)) * T.tensor(f64(3, 2)), RuntimeError,
     "must match the size"),
    ("sub_no_broadcast", lambda T: T.tensor(f64(2, 3)) - T.tensor(f64(2, 2)), RuntimeError,
     "must match the size"),
    ("mm_mismatch", lambda T: T.tensor(f64(2, 3)).mm(T.tensor(f64(2, 3))), RuntimeError,
     "cannot be multiplied"),
    ("T.mm_mismatch", lambda T: T.mm(T.tensor(f64(2, 3)), T.tensor(f64(4, 2))), RuntimeError,
     "cannot be multiplied"),
    ("matmul_mismatch", lambda T: T.tensor(f64(2, 3)) @ T.tensor(f64(2, 3)), RuntimeError,
     "cannot be multiplied"),
    ("view_bad_size", lambda T: T.tensor(f64(2, 3)).view(4), RuntimeError,
     "is invalid for input of size"),
    ("view_bad_size_-1", lambda T: T.tensor(f64(2, 3)).view(-1, 4), RuntimeError,
     "is invalid for input of size"),
    ("reshape_bad_size", lambda T: T.tensor(f64(2, 3)).reshape(5), RuntimeError,
     "is invalid for input of size"),
    ("view_of_transposed", lambda T: T.tensor(f64(2, 3)).t().view(6), RuntimeError,
     "view size is not compatible"),
    ("view_of_transpose_0_1", lambda T: T.tensor(f64(2, 3)).transpose(0, 1).view(-1),
     RuntimeError, "view size is not compatible"),
    ("sum_dim_2", lambda T: T.tensor(f64(2, 3)).sum(2), IndexError, "Dimension out of range"),
    ("sum_dim_-3", lambda T: T.tensor(f64(2, 3)).sum(-3), IndexError, "Dimension out of range"),
    ("mean_dim_2", lambda T: T.tensor(f64(2, 3)).mean(2), IndexError, "Dimension out of range"),
    ("transpose_dim_2", lambda T: T.tensor(f64(2, 3)).transpose(0, 2), IndexError,
     "Dimension out of range"),
    ("t_of_3d", lambda T: T.tensor(f64(2, 1, 3)).t(), RuntimeError, None),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*r[1:], id=r[0]) for r in ERROR_CASES])
def test_errors(T, fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(T)
