"""Divergences from torch that differential fuzzing found, pinned on both engines.

- clamp_min / clamp_max with a tensor bound: at a tie (x equal to the bound) the tangent is x's.
- zero_() / fill_() through an expanded view of a dual tensor: the tangent becomes zero, in the
  view and in the tensor it expands.
- clamp_min / clamp_max with None: a TypeError from the argument parser, whatever the dtype.
"""

from __future__ import annotations

import pytest


def _tangent(T, t):
    return T.autograd.forward_ad.unpack_dual(t).tangent


def _dual(T, values, tangents):
    fw = T.autograd.forward_ad
    return fw.make_dual(T.tensor(values, dtype=T.float64), T.tensor(tangents, dtype=T.float64))


# x ties its bound at the first two positions, is on either side of it at the next two, and is
# nan at the last.
X = [0.0, 1.0, 2.0, 0.5, float("nan")]
BOUND = [0.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("op, inside", [("clamp_min", lambda x, b: x >= b),
                                        ("clamp_max", lambda x, b: x <= b)])
@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
def test_clamp_min_max_tangent_at_a_tie_is_the_inputs(T, op, inside, inplace):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = _dual(T, X, [1.0] * 5)
        bound = _dual(T, BOUND, [10.0] * 5)
        out = getattr(x.clone(), op + "_")(bound) if inplace else getattr(T, op)(x, bound)
        tangent = _tangent(T, out)
        primal_x = fw.unpack_dual(x).primal
        primal_b = fw.unpack_dual(bound).primal
    # torch's rule: x's tangent where x is inside the bound (ties included), else the bound's;
    # a comparison with nan is false
    expected = T.where(inside(primal_x, primal_b), 1.0, 10.0).to(T.float64)
    assert tangent.tolist() == expected.tolist()
    assert tangent[0].item() == 1.0  # (x = 0, bound = 0: x's tangent)


def test_clamp_min_tangent_at_a_tie_with_only_the_input_dual(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = _dual(T, [0.0, -1.0, 1.0], [3.0, 3.0, 3.0])
        out = T.clamp_min(x, T.zeros(3, dtype=T.float64))
        assert _tangent(T, out).tolist() == [3.0, 0.0, 3.0]


def test_clamp_with_tensor_bounds_tangent_at_ties(T):
    # clamp itself keeps its own rule: with both bounds, a tie takes x's tangent; with only
    # min, the bound's (as torch's clamp_jvp has it)
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = _dual(T, [0.0, 1.0], [1.0, 1.0])
        lo = _dual(T, [0.0, 0.0], [10.0, 10.0])
        hi = _dual(T, [1.0, 1.0], [100.0, 100.0])
        assert _tangent(T, T.clamp(x, lo, hi)).tolist() == [1.0, 1.0]
        assert _tangent(T, T.clamp(x, lo)).tolist() == [10.0, 1.0]


@pytest.mark.parametrize("write", ["zero_", "fill_"])
@pytest.mark.parametrize("view", ["expand_row", "expand_slice", "expand_0d", "row_of_expand"])
def test_zero_or_fill_through_an_expanded_view_zeroes_the_tangent(T, write, view):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        if view == "expand_0d":
            d = fw.make_dual(T.tensor(2.0, dtype=T.float64), T.tensor(5.0, dtype=T.float64))
        else:
            d = _dual(T, [1.0, 2.0, 3.0], [5.0, 6.0, 7.0])
        old = _tangent(T, d).clone()
        if view == "expand_row":
            e = d.unsqueeze(0).expand(2, 3)
        elif view == "expand_slice":
            e = d[:1].expand(3)
        elif view == "expand_0d":
            e = d.expand(3)
        else:
            e = d.unsqueeze(0).expand(2, 3)[0]
        if write == "zero_":
            e.zero_()
        else:
            e.fill_(4.0)
        tangent_e, tangent_d = _tangent(T, e), _tangent(T, d)
    assert tangent_e.tolist() == T.zeros_like(tangent_e).tolist()
    if view == "expand_slice":
        # only the first element is written: the others keep theirs
        assert tangent_d.tolist() == [0.0, *old[1:].tolist()]
    else:
        assert tangent_d.tolist() == T.zeros_like(old).tolist()


def test_an_expanded_tangent_given_to_make_dual_gets_elements_of_its_own(T):
    # torch lays a tangent out as its primal: writing one element leaves the others alone
    fw = T.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(T.tensor([1.0, 2.0, 3.0], dtype=T.float64),
                         T.tensor([5.0], dtype=T.float64).expand(3))
        d[:1].expand(3).zero_()
        assert _tangent(T, d).tolist() == [0.0, 5.0, 5.0]


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
@pytest.mark.parametrize("op, arg", [("clamp_max", "max"), ("clamp_min", "min")])
@pytest.mark.parametrize("how", ["method", "function", "inplace"])
def test_clamp_min_max_with_none_is_a_type_error(T, dtype, op, arg, how):
    x = T.tensor([1, 0], dtype=getattr(T, dtype))
    call = {"method": lambda: getattr(x, op)(None), "function": lambda: getattr(T, op)(x, None),
            "inplace": lambda: getattr(x, op + "_")(None)}[how]
    with pytest.raises(TypeError, match=rf"{op}_?\(\) received an invalid combination of "
                                        r"arguments - got \((Tensor, )?NoneType\)"):
        call()


def test_clamp_with_no_bound_is_still_a_runtime_error(T):
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        T.tensor([True]).clamp(None)
