"""Shapes, joins and matmul of every rank, pinned to torch 2.13 on both backends.

permute, ``.T``/``.mT``, flatten, view_as/reshape_as/expand_as, contiguous, split/chunk, cat,
stack, unbind, bmm and matmul beyond two dims: node names and ``_saved_*`` fields, the graph
matmul builds for each rank combination, forward values against NumPy, storage sharing of views,
gradcheck and gradgradcheck, gradients of multi-output ops when only some outputs are used, and
the errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import leaf, sample, to_np

# torch reports a saved negative dim as an unsigned 64-bit integer: -1 reads back as 2**64 - 1.
NEG1 = 2**64 - 1
NEG2 = 2**64 - 2


@dataclass(frozen=True)
class Is:
    """The saved tensor is this very input object."""

    name: str


@dataclass(frozen=True)
class Sized:
    """The saved tensor is an intermediate of this shape."""

    shape: tuple


def graph_inputs(T, rng):
    return SimpleNamespace(
        x=leaf(T, sample(rng, (2, 3, 4))),
        w=leaf(T, sample(rng, (2, 3, 4))),
        c=leaf(T, sample(rng, (2, 3, 4)), requires_grad=False),
        m=leaf(T, sample(rng, (3, 4))),
        k=leaf(T, sample(rng, (4, 5)), requires_grad=False),
        s=leaf(T, sample(rng, ())),
        b=leaf(T, sample(rng, (2, 4, 5))),
        bc=leaf(T, sample(rng, (2, 4, 5)), requires_grad=False),
    )


def node(id_, fn, name, **saved):
    """A table row: ``fn(T, inputs)``, the node name and every ``_saved_<key>`` field."""
    return pytest.param(fn, name, {f"_saved_{k}": v for k, v in saved.items()}, id=id_)


X_SIZES = (2, 3, 4)
SPLIT_2 = dict(dim=2, self_sym_sizes=X_SIZES, split_size=2)

NODE_CASES = [
    # permute and the transposes
    node("x.permute", lambda T, i: i.x.permute(2, 0, 1), "PermuteBackward0", dims=(2, 0, 1)),
    node("x.permute_tuple", lambda T, i: i.x.permute((2, 0, 1)), "PermuteBackward0",
         dims=(2, 0, 1)),
    node("x.permute_list", lambda T, i: i.x.permute([1, 2, 0]), "PermuteBackward0",
         dims=(1, 2, 0)),
    node("x.permute_kw", lambda T, i: i.x.permute(dims=(0, 2, 1)), "PermuteBackward0",
         dims=(0, 2, 1)),
    node("x.permute_neg", lambda T, i: i.x.permute(-1, 0, 1), "PermuteBackward0",
         dims=(NEG1, 0, 1)),
    node("T.permute", lambda T, i: T.permute(i.x, (2, 0, 1)), "PermuteBackward0", dims=(2, 0, 1)),
    node("s.permute_0d", lambda T, i: i.s.permute(()), "PermuteBackward0", dims=()),
    node("m.T", lambda T, i: i.m.T, "PermuteBackward0", dims=(1, 0)),
    node("x.mT", lambda T, i: i.x.mT, "TransposeBackward0", dim0=NEG2, dim1=NEG1),
    node("m.mT", lambda T, i: i.m.mT, "TransposeBackward0", dim0=NEG2, dim1=NEG1),
    # flatten: a view, an aliasing reshape or a copy, as reshape decides
    node("x.flatten", lambda T, i: i.x.flatten(), "ViewBackward0", self_sym_sizes=X_SIZES),
    node("x.flatten_1", lambda T, i: i.x.flatten(1), "ViewBackward0", self_sym_sizes=X_SIZES),
    node("T.flatten_0_1", lambda T, i: T.flatten(i.x, 0, 1), "ViewBackward0",
         self_sym_sizes=X_SIZES),
    node("x.flatten_kw", lambda T, i: i.x.flatten(start_dim=-2, end_dim=-1), "ViewBackward0",
         self_sym_sizes=X_SIZES),
    node("s.flatten_0d", lambda T, i: i.s.flatten(), "ViewBackward0", self_sym_sizes=()),
    node("transposed.flatten", lambda T, i: i.x.transpose(0, 1).flatten(), "UnsafeViewBackward0",
         self_sym_sizes=(3, 2, 4)),
    node("permuted.flatten_1_2", lambda T, i: i.x.permute(2, 0, 1).flatten(1, 2),
         "ReshapeAliasBackward0", self_sym_sizes=(4, 2, 3)),
    # reshape of a strided tensor whose strides allow a view
    node("m.t.reshape", lambda T, i: i.m.t().reshape(2, 2, 3), "ReshapeAliasBackward0",
         self_sym_sizes=(4, 3)),
    node("m.t.reshape_same", lambda T, i: i.m.t().reshape(4, 3), "ReshapeAliasBackward0",
         self_sym_sizes=(4, 3)),
    # the *_as ops
    node("x.view_as", lambda T, i: i.x.view_as(i.m.new_zeros(6, 4)), "ViewBackward0",
         self_sym_sizes=X_SIZES),
    node("x.reshape_as", lambda T, i: i.x.reshape_as(i.m.new_zeros(6, 4)), "ViewBackward0",
         self_sym_sizes=X_SIZES),
    node("transposed.reshape_as", lambda T, i: i.x.transpose(0, 1).reshape_as(i.m.new_zeros(24)),
         "UnsafeViewBackward0", self_sym_sizes=(3, 2, 4)),
    node("x.expand_as", lambda T, i: i.x.sum(1, keepdim=True).expand_as(i.x), "ExpandBackward0",
         self_sym_sizes=(2, 1, 4)),
    node("s.expand_as", lambda T, i: i.s.expand_as(i.m), "ExpandBackward0", self_sym_sizes=()),
    # contiguous copies a strided tensor
    node("transposed.contiguous", lambda T, i: i.x.transpose(0, 1).contiguous(),
         "CloneBackward0"),
    # split and chunk: every output shares one node
    node("x.split_2_2", lambda T, i: i.x.split(2, 2)[1], "SplitBackward0", **SPLIT_2),
    node("x.split_3_2_uneven", lambda T, i: i.x.split(3, 2)[1], "SplitBackward0", dim=2,
         self_sym_sizes=X_SIZES, split_size=3),
    node("x.split_10", lambda T, i: i.x.split(10)[0], "SplitBackward0", dim=0,
         self_sym_sizes=X_SIZES, split_size=10),
    node("x.split_kw", lambda T, i: i.x.split(split_size=2, dim=2)[0], "SplitBackward0",
         **SPLIT_2),
    node("x.split_-1", lambda T, i: i.x.split(2, -1)[0], "SplitBackward0", dim=NEG1,
         self_sym_sizes=X_SIZES, split_size=2),
    node("T.split", lambda T, i: T.split(i.x, 1)[1], "SplitBackward0", dim=0,
         self_sym_sizes=X_SIZES, split_size=1),
    node("x.split_list", lambda T, i: i.x.split([1, 3], 2)[0], "SplitWithSizesBackward0", dim=2,
         self_sym_sizes=X_SIZES, split_sizes=(1, 3)),
    node("x.split_tuple_-1", lambda T, i: i.x.split((1, 3), -1)[1], "SplitWithSizesBackward0",
         dim=NEG1, self_sym_sizes=X_SIZES, split_sizes=(1, 3)),
    node("T.split_list", lambda T, i: T.split(i.x, [1, 2], 1)[1], "SplitWithSizesBackward0",
         dim=1, self_sym_sizes=X_SIZES, split_sizes=(1, 2)),
    node("x.split_with_sizes", lambda T, i: i.x.split_with_sizes([2, 1], 1)[0],
         "SplitWithSizesBackward0", dim=1, self_sym_sizes=X_SIZES, split_sizes=(2, 1)),
    node("T.split_with_sizes", lambda T, i: T.split_with_sizes(i.x, [1, 1], 0)[1],
         "SplitWithSizesBackward0", dim=0, self_sym_sizes=X_SIZES, split_sizes=(1, 1)),
    node("x.chunk_2_2", lambda T, i: i.x.chunk(2, 2)[0], "SplitBackward0", **SPLIT_2),
    node("x.chunk_3_2", lambda T, i: i.x.chunk(3, 2)[1], "SplitBackward0", **SPLIT_2),
    node("x.chunk_-1", lambda T, i: i.x.chunk(2, -1)[1], "SplitBackward0", dim=NEG1,
         self_sym_sizes=X_SIZES, split_size=2),
    node("T.chunk", lambda T, i: T.chunk(i.x, 2, 1)[1], "SplitBackward0", dim=1,
         self_sym_sizes=X_SIZES, split_size=2),
    # joins
    node("T.cat", lambda T, i: T.cat([i.x, i.w]), "CatBackward0", dim=0),
    node("T.cat_-1", lambda T, i: T.cat([i.x, i.c], -1), "CatBackward0", dim=NEG1),
    node("T.cat_tuple", lambda T, i: T.cat((i.x, i.w, i.x), 1), "CatBackward0", dim=1),
    node("T.cat_axis", lambda T, i: T.cat([i.x, i.w], axis=2), "CatBackward0", dim=2),
    node("T.cat_one", lambda T, i: T.cat([i.x]), "CatBackward0", dim=0),
    node("T.concat", lambda T, i: T.concat([i.x, i.w], 1), "CatBackward0", dim=1),
    node("T.concatenate", lambda T, i: T.concatenate([i.c, i.w], 2), "CatBackward0", dim=2),
    node("T.stack", lambda T, i: T.stack([i.x, i.w]), "StackBackward0", dim=0),
    node("T.stack_-1", lambda T, i: T.stack([i.x, i.c], -1), "StackBackward0", dim=NEG1),
    node("x.unbind_1", lambda T, i: i.x.unbind(1)[2], "UnbindBackward0", dim=1),
    node("T.unbind_-1", lambda T, i: T.unbind(i.x, -1)[0], "UnbindBackward0", dim=NEG1),
    # batched products
    node("T.bmm", lambda T, i: T.bmm(i.x, i.b), "BmmBackward0", self=Is("x"), mat2=Is("b")),
    node("x.bmm", lambda T, i: i.x.bmm(i.b), "BmmBackward0", self=Is("x"), mat2=Is("b")),
    node("x.bmm_const", lambda T, i: i.x.bmm(i.bc), "BmmBackward0", self=None, mat2=Is("bc")),
    node("const.bmm_x", lambda T, i: i.c.bmm(i.b), "BmmBackward0", self=Is("c"), mat2=None),
    node("3d@3d", lambda T, i: i.x @ i.b, "UnsafeViewBackward0", self_sym_sizes=(2, 3, 5)),
    node("3d@2d", lambda T, i: T.matmul(i.x, i.k), "UnsafeViewBackward0", self_sym_sizes=(6, 5)),
    node("2d@3d", lambda T, i: i.m.matmul(i.b), "CloneBackward0"),
    # mm keeps each input's strides only for that input's own gradient
    node("mm_self_only", lambda T, i: i.m.mm(i.k), "MmBackward0", self=None, mat2=Is("k"),
         self_sym_sizes=(3, 4), self_sym_strides=(4, 1), mat2_sym_sizes=(4, 5),
         mat2_sym_strides=()),
    node("mm_mat2_only", lambda T, i: T.mm(i.k.t(), i.m.t()), "MmBackward0", self=Sized((5, 4)),
         mat2=None, self_sym_sizes=(5, 4), self_sym_strides=(), mat2_sym_sizes=(4, 3),
         mat2_sym_strides=(1, 4)),
]


def check_saved(T, actual, expected, inputs):
    if isinstance(expected, Is):
        assert actual is getattr(inputs, expected.name)
    elif isinstance(expected, Sized):
        assert isinstance(actual, T.Tensor)
        assert tuple(actual.shape) == expected.shape
    elif expected is None:
        assert actual is None
    else:
        assert type(actual) is type(expected)
        assert actual == expected


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    grad_fn = fn(T, inputs).grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, expected in saved.items():
        check_saved(T, getattr(grad_fn, attr), expected, inputs)


# --------------------------------------------------------------------------------------------
# The graph matmul builds, rank by rank
# --------------------------------------------------------------------------------------------


def render(T, out, leaves):
    """The graph under ``out``, one node a line: its name and its ``_saved_*`` fields (a saved
    tensor as its shape), the inputs indented below it."""
    lines = []

    def walk(fn, depth):
        pad = "  " * depth
        if fn is None:
            lines.append(pad + "None")
            return
        name = type(fn).__name__
        if name == "AccumulateGrad":
            leaf_name = next(k for k, v in leaves.items() if v is fn.variable)
            lines.append(f"{pad}AccumulateGrad {leaf_name}")
            return
        fields = []
        for attr in sorted(a for a in dir(fn) if a.startswith("_saved_")):
            value = getattr(fn, attr)
            if isinstance(value, T.Tensor):
                value = list(value.shape)
            fields.append(f"{attr[len('_saved_'):]}={value}")
        lines.append(pad + " ".join([name, *fields]))
        for next_fn, _ in fn.next_functions:
            walk(next_fn, depth + 1)

    walk(out.grad_fn, 0)
    return "\n".join(lines)


def operand(T, rng, shape, requires_grad, strided):
    """A leaf of ``shape``; ``strided``: a dense tensor with its dims in reverse memory order."""
    if not strided:
        return leaf(T, sample(rng, shape), requires_grad)
    t = T.tensor(sample(rng, shape[::-1])).permute(*reversed(range(len(shape))))
    return t.requires_grad_(requires_grad)


A, B = "a", "b"
# id, (shape, requires_grad, strided) of a and of b, the graph of a @ b
MATMUL_GRAPHS = [
    ("3d@3d", ((2, 3, 4), True, False), ((2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3, 5)
  BmmBackward0 mat2=[2, 4, 5] self=[2, 3, 4]
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      ExpandBackward0 self_sym_sizes=(2, 3, 4)
        AccumulateGrad a
    ViewBackward0 self_sym_sizes=(2, 4, 5)
      ExpandBackward0 self_sym_sizes=(2, 4, 5)
        AccumulateGrad b"""),
    ("3d@3d_a_only", ((2, 3, 4), True, False), ((2, 4, 5), False, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3, 5)
  BmmBackward0 mat2=[2, 4, 5] self=None
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      ExpandBackward0 self_sym_sizes=(2, 3, 4)
        AccumulateGrad a
    None"""),
    ("4d@3d_broadcast", ((2, 1, 3, 4), True, False), ((5, 4, 2), True, False), """
UnsafeViewBackward0 self_sym_sizes=(10, 3, 2)
  BmmBackward0 mat2=[10, 4, 2] self=[10, 3, 4]
    UnsafeViewBackward0 self_sym_sizes=(2, 5, 3, 4)
      CloneBackward0
        ExpandBackward0 self_sym_sizes=(2, 1, 3, 4)
          AccumulateGrad a
    UnsafeViewBackward0 self_sym_sizes=(2, 5, 4, 2)
      CloneBackward0
        ExpandBackward0 self_sym_sizes=(5, 4, 2)
          AccumulateGrad b"""),
    ("4d@4d_broadcast", ((2, 1, 3, 4), True, False), ((1, 2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(4, 3, 5)
  BmmBackward0 mat2=[4, 4, 5] self=[4, 3, 4]
    UnsafeViewBackward0 self_sym_sizes=(2, 2, 3, 4)
      CloneBackward0
        ExpandBackward0 self_sym_sizes=(2, 1, 3, 4)
          AccumulateGrad a
    UnsafeViewBackward0 self_sym_sizes=(2, 2, 4, 5)
      CloneBackward0
        ExpandBackward0 self_sym_sizes=(1, 2, 4, 5)
          AccumulateGrad b"""),
    ("3d@2d", ((2, 3, 4), True, False), ((4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(6, 5)
  MmBackward0 mat2=[4, 5] mat2_sym_sizes=(4, 5) mat2_sym_strides=(5, 1) self=[6, 4] \
self_sym_sizes=(6, 4) self_sym_strides=(4, 1)
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      AccumulateGrad a
    AccumulateGrad b"""),
    ("3d@2d_a_only", ((2, 3, 4), True, False), ((4, 5), False, False), """
UnsafeViewBackward0 self_sym_sizes=(6, 5)
  MmBackward0 mat2=[4, 5] mat2_sym_sizes=(4, 5) mat2_sym_strides=() self=None \
self_sym_sizes=(6, 4) self_sym_strides=(4, 1)
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      AccumulateGrad a
    None"""),
    ("3d_strided@2d_a_only", ((2, 3, 4), True, True), ((4, 5), False, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3, 5)
  BmmBackward0 mat2=[2, 4, 5] self=None
    ReshapeAliasBackward0 self_sym_sizes=(2, 3, 4)
      ExpandBackward0 self_sym_sizes=(2, 3, 4)
        AccumulateGrad a
    None"""),
    ("3d_strided@2d", ((2, 3, 4), True, True), ((4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(6, 5)
  MmBackward0 mat2=[4, 5] mat2_sym_sizes=(4, 5) mat2_sym_strides=(5, 1) self=[6, 4] \
self_sym_sizes=(6, 4) self_sym_strides=(4, 1)
    UnsafeViewBackward0 self_sym_sizes=(2, 3, 4)
      CloneBackward0
        AccumulateGrad a
    AccumulateGrad b"""),
    ("2d@3d", ((3, 4), True, False), ((2, 4, 5), True, False), """
CloneBackward0
  TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
    UnsafeViewBackward0 self_sym_sizes=(10, 3)
      MmBackward0 mat2=[4, 3] mat2_sym_sizes=(4, 3) mat2_sym_strides=(1, 4) self=[10, 4] \
self_sym_sizes=(10, 4) self_sym_strides=(4, 1)
        UnsafeViewBackward0 self_sym_sizes=(2, 5, 4)
          CloneBackward0
            TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
              AccumulateGrad b
        TBackward0
          AccumulateGrad a"""),
    ("2d@3d_b_only", ((3, 4), False, False), ((2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3, 5)
  BmmBackward0 mat2=None self=[2, 3, 4]
    None
    ViewBackward0 self_sym_sizes=(2, 4, 5)
      ExpandBackward0 self_sym_sizes=(2, 4, 5)
        AccumulateGrad b"""),
    ("1d@3d", ((4,), True, False), ((2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(10,)
  MvBackward0 self=[10, 4] vec=[4]
    UnsafeViewBackward0 self_sym_sizes=(2, 5, 4)
      CloneBackward0
        TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
          AccumulateGrad b
    AccumulateGrad a"""),
    ("1d@3d_b_only", ((4,), False, False), ((2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 1, 5)
  BmmBackward0 mat2=None self=[2, 1, 4]
    None
    ViewBackward0 self_sym_sizes=(2, 4, 5)
      ExpandBackward0 self_sym_sizes=(2, 4, 5)
        AccumulateGrad b"""),
    ("3d@1d", ((2, 3, 4), True, False), ((4,), True, False), """
UnsafeViewBackward0 self_sym_sizes=(6,)
  MvBackward0 self=[6, 4] vec=[4]
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      AccumulateGrad a
    AccumulateGrad b"""),
    ("3d_strided@1d_a_only", ((2, 3, 4), True, True), ((4,), False, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3)
  SqueezeBackward1 dim=18446744073709551615 self_sym_sizes=(2, 3, 1)
    BmmBackward0 mat2=[2, 4, 1] self=None
      ReshapeAliasBackward0 self_sym_sizes=(2, 3, 4)
        ExpandBackward0 self_sym_sizes=(2, 3, 4)
          AccumulateGrad a
      None"""),
    ("4d@1d", ((2, 2, 3, 4), True, False), ((4,), True, False), """
UnsafeViewBackward0 self_sym_sizes=(12,)
  MvBackward0 self=[12, 4] vec=[4]
    ViewBackward0 self_sym_sizes=(2, 2, 3, 4)
      AccumulateGrad a
    AccumulateGrad b"""),
    ("1d@4d", ((4,), True, False), ((2, 2, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(20,)
  MvBackward0 self=[20, 4] vec=[4]
    UnsafeViewBackward0 self_sym_sizes=(2, 2, 5, 4)
      CloneBackward0
        TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
          AccumulateGrad b
    AccumulateGrad a"""),
    ("batch1@3d", ((1, 3, 4), True, False), ((2, 4, 5), True, False), """
CloneBackward0
  TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
    UnsafeViewBackward0 self_sym_sizes=(10, 3)
      MmBackward0 mat2=[4, 3] mat2_sym_sizes=(4, 3) mat2_sym_strides=(1, 4) self=[10, 4] \
self_sym_sizes=(10, 4) self_sym_strides=(4, 1)
        UnsafeViewBackward0 self_sym_sizes=(2, 5, 4)
          CloneBackward0
            TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
              AccumulateGrad b
        TBackward0
          SqueezeBackward1 dim=0 self_sym_sizes=(1, 3, 4)
            AccumulateGrad a"""),
    ("3d@batch1", ((2, 3, 4), True, False), ((1, 4, 5), True, False), """
UnsafeViewBackward0 self_sym_sizes=(6, 5)
  MmBackward0 mat2=[4, 5] mat2_sym_sizes=(4, 5) mat2_sym_strides=(5, 1) self=[6, 4] \
self_sym_sizes=(6, 4) self_sym_strides=(4, 1)
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      AccumulateGrad a
    SqueezeBackward1 dim=0 self_sym_sizes=(1, 4, 5)
      AccumulateGrad b"""),
    ("3d@batch1_a_only", ((2, 3, 4), True, False), ((1, 4, 5), False, False), """
UnsafeViewBackward0 self_sym_sizes=(2, 3, 5)
  BmmBackward0 mat2=[2, 4, 5] self=None
    ViewBackward0 self_sym_sizes=(2, 3, 4)
      ExpandBackward0 self_sym_sizes=(2, 3, 4)
        AccumulateGrad a
    None"""),
    ("2d@batch1_3d", ((3, 4), True, False), ((1, 4, 5), True, False), """
CloneBackward0
  TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
    UnsafeViewBackward0 self_sym_sizes=(5, 3)
      MmBackward0 mat2=[4, 3] mat2_sym_sizes=(4, 3) mat2_sym_strides=(1, 4) self=[5, 4] \
self_sym_sizes=(5, 4) self_sym_strides=(1, 5)
        ReshapeAliasBackward0 self_sym_sizes=(1, 5, 4)
          TransposeBackward0 dim0=18446744073709551614 dim1=18446744073709551615
            AccumulateGrad b
        TBackward0
          AccumulateGrad a"""),
]


@pytest.mark.parametrize("spec_a,spec_b,expected",
                         [pytest.param(*row[1:], id=row[0]) for row in MATMUL_GRAPHS])
def test_matmul_builds_torchs_graph(T, rng, spec_a, spec_b, expected):
    a, b = operand(T, rng, *spec_a), operand(T, rng, *spec_b)
    assert render(T, a @ b, {A: a, B: b}) == expected.strip()


def test_bmm_saves_the_operands_each_other_gradient_needs(T, rng):
    a, b = leaf(T, sample(rng, (2, 3, 4))), leaf(T, sample(rng, (2, 4, 5)))
    assert render(T, T.bmm(a, b), {A: a, B: b}) == (
        "BmmBackward0 mat2=[2, 4, 5] self=[2, 3, 4]\n  AccumulateGrad a\n  AccumulateGrad b")


def test_cat_has_an_edge_per_tensor_and_none_for_constants(T, rng):
    x = leaf(T, sample(rng, (2, 3)))
    ints = T.tensor(np.ones((1, 3), np.int64))
    out = T.cat([x, ints, x * 2])
    names = [None if fn is None else type(fn).__name__ for fn, _ in out.grad_fn.next_functions]
    assert names == ["AccumulateGrad", None, "MulBackward0"]


def test_split_outputs_share_one_node_and_number_their_outputs(T, rng):
    x = leaf(T, sample(rng, (2, 5)))
    pieces = x.split(2, 1)
    assert len({id(p.grad_fn) for p in pieces}) == 1
    assert [p.output_nr for p in pieces] == [0, 1, 2]
    assert [tuple(p.shape) for p in pieces] == [(2, 2), (2, 2), (2, 1)]


# --------------------------------------------------------------------------------------------
# .T and .mT: torch's deprecation warnings and the identity cases
# --------------------------------------------------------------------------------------------


@pytest.fixture
def warn_always(T):
    """Give torch's once-per-process warnings every time, so that each case sees its own."""
    before = T.is_warn_always_enabled()
    T.set_warn_always(True)
    yield
    T.set_warn_always(before)


@pytest.mark.usefixtures("warn_always")
@pytest.mark.parametrize("shape,dims", [((3,), (0,)), ((2, 3, 4), (2, 1, 0))], ids=["1d", "3d"])
def test_T_of_another_rank_warns_and_reverses_the_dims(T, rng, shape, dims):
    x = leaf(T, sample(rng, shape))
    with pytest.warns(UserWarning, match="The use of `x.T` on tensors of dimension other than 2"):
        y = x.T
    assert type(y.grad_fn).__name__ == "PermuteBackward0"
    assert y.grad_fn._saved_dims == dims
    np.testing.assert_array_equal(to_np(y), to_np(x).transpose())


@pytest.mark.usefixtures("warn_always")
def test_T_of_a_0d_tensor_warns_and_still_records_a_permute(T):
    x = leaf(T, np.array(2.0))
    with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
        y = x.T
    assert type(y.grad_fn).__name__ == "PermuteBackward0"
    assert y.grad_fn._saved_dims == ()


@pytest.mark.usefixtures("warn_always")
def test_mT_of_a_0d_tensor_warns_and_returns_the_tensor_itself(T):
    x = leaf(T, np.array(2.0))
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        assert x.mT is x


def test_T_of_a_matrix_does_not_warn(T, rng, recwarn):
    x = leaf(T, sample(rng, (2, 3)))
    assert tuple(x.T.shape) == (3, 2)
    assert not [w for w in recwarn if "x.T" in str(w.message)]


# --------------------------------------------------------------------------------------------
# The identity cases: no new tensor, no new node
# --------------------------------------------------------------------------------------------


def test_contiguous_of_a_contiguous_tensor_is_the_tensor_itself(T, rng):
    x = leaf(T, sample(rng, (2, 3)))
    y = x * 2
    assert x.contiguous() is x
    assert y.contiguous() is y


@pytest.mark.parametrize("shape,start,end", [((3,), 0, -1), ((2, 3, 4), 1, 1), ((2, 3), -1, -1)])
def test_flatten_of_a_single_dim_is_the_tensor_itself(T, rng, shape, start, end):
    x = leaf(T, sample(rng, shape)) * 1
    assert x.flatten(start, end) is x


# --------------------------------------------------------------------------------------------
# Forward values against NumPy, and which results share storage with their input
# --------------------------------------------------------------------------------------------


def shares(a, b):
    return np.shares_memory(to_np(a), to_np(b))


def strided(T, rng, shape):
    """A tensor whose dims are in reverse memory order (not contiguous)."""
    return T.tensor(sample(rng, shape[::-1])).permute(*reversed(range(len(shape))))


# id, fn(T, x) on x of shape (2, 3, 4), NumPy reference on x's values
VIEWS = [
    ("permute", lambda T, x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("T.permute", lambda T, x: T.permute(x, (1, 0, 2)), lambda a: a.transpose(1, 0, 2)),
    ("mT", lambda T, x: x.mT, lambda a: a.swapaxes(-1, -2)),
    ("row.T", lambda T, x: x.unbind()[0].T, lambda a: a[0].T),
    ("flatten", lambda T, x: x.flatten(), lambda a: a.reshape(-1)),
    ("flatten_1", lambda T, x: x.flatten(1), lambda a: a.reshape(2, 12)),
    ("permuted.flatten_1_2", lambda T, x: x.permute(2, 0, 1).flatten(1, 2),
     lambda a: a.transpose(2, 0, 1).reshape(4, 6)),
    ("view_as", lambda T, x: x.view_as(T.zeros(4, 6)), lambda a: a.reshape(4, 6)),
    ("reshape_as", lambda T, x: x.reshape_as(T.zeros(6, 4)), lambda a: a.reshape(6, 4)),
    ("expand_as", lambda T, x: x.unbind(1)[0].unsqueeze(1).expand_as(x),
     lambda a: np.broadcast_to(a[:, :1], a.shape)),
    ("split_piece", lambda T, x: x.split(3, 2)[1], lambda a: a[:, :, 3:]),
    ("split_list_piece", lambda T, x: T.split(x, [1, 2], 1)[1], lambda a: a[:, 1:]),
    ("chunk_piece", lambda T, x: x.chunk(2, 0)[1], lambda a: a[1:]),
    ("unbind_piece", lambda T, x: x.unbind(2)[3], lambda a: a[:, :, 3]),
]


@pytest.mark.parametrize("fn,ref", [pytest.param(*r[1:], id=r[0]) for r in VIEWS])
def test_views_hold_the_values_and_share_storage(T, rng, fn, ref):
    x = leaf(T, sample(rng, (2, 3, 4)))
    y = fn(T, x)
    np.testing.assert_array_equal(to_np(y), ref(to_np(x)))
    assert shares(y, x)


# id, fn(T, x, w) on x and w of shape (2, 3, 4), NumPy reference
COPIES = [
    ("cat", lambda T, x, w: T.cat([x, w], 1), lambda a, b: np.concatenate([a, b], 1)),
    ("cat_-1", lambda T, x, w: T.cat([x, w, x], -1), lambda a, b: np.concatenate([a, b, a], -1)),
    ("cat_one", lambda T, x, w: T.cat([x]), lambda a, b: a.copy()),
    ("stack", lambda T, x, w: T.stack([x, w]), lambda a, b: np.stack([a, b])),
    ("stack_-1", lambda T, x, w: T.stack([x, w], -1), lambda a, b: np.stack([a, b], -1)),
    ("strided.contiguous", lambda T, x, w: x.transpose(0, 2).contiguous(),
     lambda a, b: a.transpose(2, 1, 0)),
    ("strided.flatten", lambda T, x, w: x.transpose(0, 1).flatten(),
     lambda a, b: a.transpose(1, 0, 2).reshape(-1)),
    ("strided.reshape_as", lambda T, x, w: x.mT.reshape_as(w),
     lambda a, b: a.swapaxes(1, 2).reshape(2, 3, 4)),
    ("bmm", lambda T, x, w: T.bmm(x, w.mT), lambda a, b: a @ b.swapaxes(1, 2)),
    ("matmul", lambda T, x, w: x @ w.mT, lambda a, b: a @ b.swapaxes(1, 2)),
]


@pytest.mark.parametrize("fn,ref", [pytest.param(*r[1:], id=r[0]) for r in COPIES])
def test_joins_and_copies_hold_the_values_in_new_storage(T, rng, fn, ref):
    x, w = leaf(T, sample(rng, (2, 3, 4))), leaf(T, sample(rng, (2, 3, 4)))
    y = fn(T, x, w)
    np.testing.assert_allclose(to_np(y), ref(to_np(x), to_np(w)), rtol=1e-12)
    assert not shares(y, x) and not shares(y, w)
    assert y.is_contiguous()


def test_contiguous_copy_is_laid_out_row_major(T, rng):
    x = strided(T, rng, (2, 3, 4))
    assert not x.is_contiguous()
    y = x.contiguous()
    assert y.is_contiguous()
    assert y.stride() == (12, 4, 1)
    np.testing.assert_array_equal(to_np(y), to_np(x))


@pytest.mark.parametrize(
    "split,ref",
    [
        pytest.param(lambda T, x: x.split(2, 1), lambda a: np.split(a, [2, 4], 1), id="split_2"),
        pytest.param(lambda T, x: x.split(5, 1), lambda a: [a], id="split_bigger"),
        pytest.param(lambda T, x: x.split([1, 4], 1), lambda a: np.split(a, [1], 1),
                     id="split_list"),
        pytest.param(lambda T, x: x.split([0, 5, 0], 1), lambda a: np.split(a, [0, 5], 1),
                     id="split_empty_pieces"),
        pytest.param(lambda T, x: x.chunk(2, 1), lambda a: np.split(a, [3], 1), id="chunk_2"),
        pytest.param(lambda T, x: x.chunk(4, 1), lambda a: np.split(a, [2, 4], 1),
                     id="chunk_4_gives_3"),
        pytest.param(lambda T, x: x.chunk(9, -1), lambda a: np.split(a, range(1, 5), 1),
                     id="chunk_more_than_size"),
        pytest.param(lambda T, x: T.chunk(x, 1, 0), lambda a: [a], id="chunk_1"),
        pytest.param(lambda T, x: x.unbind(1), lambda a: list(a.transpose(1, 0)), id="unbind"),
    ],
)
def test_split_chunk_and_unbind_pieces(T, rng, split, ref):
    x = leaf(T, sample(rng, (2, 5)))
    pieces = split(T, x)
    assert isinstance(pieces, tuple)
    expected = ref(to_np(x))
    assert len(pieces) == len(expected)
    for piece, want in zip(pieces, expected):
        np.testing.assert_array_equal(to_np(piece), want)


def test_chunk_of_an_empty_dim_gives_every_chunk(T):
    x = T.zeros(0, 3, requires_grad=True)
    pieces = x.chunk(3)
    assert [tuple(p.shape) for p in pieces] == [(0, 3)] * 3
    assert type(pieces[0].grad_fn).__name__ == "SplitWithSizesBackward0"
    assert pieces[0].grad_fn._saved_split_sizes == (0, 0, 0)


# Every rank combination matmul accepts beyond two dims, with broadcast batch dims.
MATMUL_SHAPES = [
    ((2, 3, 4), (2, 4, 2)),
    ((2, 3, 4), (4, 2)),
    ((3, 4), (2, 4, 2)),
    ((4,), (2, 4, 2)),
    ((2, 3, 4), (4,)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((2, 1, 3, 4), (1, 2, 4, 2)),
    ((2, 2, 3, 4), (4, 2)),
    ((3, 4), (2, 2, 4, 2)),
    ((2, 2, 3, 4), (4,)),
    ((4,), (2, 2, 4, 2)),
    ((1, 3, 4), (2, 4, 2)),
    ((2, 3, 4), (1, 4, 2)),
    ((1, 3, 4), (1, 4, 2)),
]


def test_matmul_values_for_every_rank_with_and_without_grad(T, rng):
    for shape_a, shape_b in MATMUL_SHAPES:
        a_np, b_np = sample(rng, shape_a), sample(rng, shape_b)
        a, b = T.tensor(a_np), T.tensor(b_np)
        plain = a @ b
        recorded = leaf(T, a_np) @ leaf(T, b_np)
        expected = np.matmul(a_np, b_np)
        assert tuple(plain.shape) == expected.shape == tuple(recorded.shape)
        np.testing.assert_allclose(to_np(plain), expected, rtol=1e-12)
        np.testing.assert_allclose(to_np(recorded), expected, rtol=1e-12)
        assert plain.is_contiguous() and recorded.is_contiguous()


def test_matmul_of_integer_batches_stays_integer(T):
    a = T.tensor(np.arange(24, dtype=np.int64).reshape(2, 3, 4))
    b = T.tensor(np.arange(8, dtype=np.int64).reshape(4, 2))
    out = a @ b
    assert out.dtype == T.int64
    np.testing.assert_array_equal(to_np(out), to_np(a) @ to_np(b))


def test_matmul_of_empty_batches(T):
    assert tuple((T.zeros(0, 3, 4) @ T.zeros(4, 5)).shape) == (0, 3, 5)
    assert tuple((T.zeros(0, 3, 4) @ T.zeros(1, 4, 5)).shape) == (0, 3, 5)
    out = T.zeros(2, 3, 0) @ T.zeros(2, 0, 5)
    np.testing.assert_array_equal(to_np(out), np.zeros((2, 3, 5)))


# --------------------------------------------------------------------------------------------
# dtypes of joins, and the gradients that flow back into each input's dtype
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "join", [lambda T, ts: T.cat(ts), lambda T, ts: T.stack(ts)], ids=["cat", "stack"])
@pytest.mark.parametrize(
    "dtypes,result",
    [
        (("float32", "float64"), "float64"),
        (("int64", "float32"), "float32"),
        (("int32", "int64"), "int64"),
        (("bool", "uint8"), "uint8"),
        (("bool", "float16"), "float16"),
    ],
    ids=lambda v: "_".join(v) if isinstance(v, tuple) else v,
)
def test_joins_promote_the_dtypes(T, join, dtypes, result):
    tensors = [T.ones(2, dtype=getattr(T, d)) for d in dtypes]
    assert join(T, tensors).dtype == getattr(T, result)


@pytest.mark.parametrize(
    "join", [lambda T, ts: T.cat(ts), lambda T, ts: T.stack(ts)], ids=["cat", "stack"])
def test_join_gradients_come_back_in_each_inputs_dtype(T, rng, join):
    single = T.tensor(sample(rng, (2, 3), dtype=np.float32), requires_grad=True)
    double = leaf(T, sample(rng, (2, 3)))
    out = join(T, [single, double])
    assert out.dtype == T.float64
    (out * T.tensor(sample(rng, tuple(out.shape)))).sum().backward()
    assert single.grad.dtype == T.float32
    assert double.grad.dtype == T.float64


def test_cat_skips_legacy_empty_tensors_and_gives_them_an_empty_gradient(T, rng):
    x = leaf(T, sample(rng, (2, 3)))
    empty = leaf(T, np.zeros(0))
    out = T.cat([empty, x, empty], 1)
    np.testing.assert_array_equal(to_np(out), to_np(x))
    out.sum().backward()
    assert tuple(empty.grad.shape) == (0,)
    np.testing.assert_array_equal(to_np(x.grad), np.ones((2, 3)))


def test_an_empty_1d_input_of_cat_gets_fresh_zeros_even_among_1d_tensors(T, rng):
    # torch's cat backward gives any input of shape (0,) new zeros, not a narrow of grad: with
    # create_graph its gradient has no history, while an empty input of another shape has one
    x = leaf(T, sample(rng, (2,)))
    empty = leaf(T, np.zeros(0))
    g_x, g_empty = T.autograd.grad(T.cat([x, empty]).pow(2).sum(), [x, empty],
                                   create_graph=True)
    assert g_x.requires_grad and g_x.grad_fn.name() == "SliceBackward0"
    assert tuple(g_empty.shape) == (0,) and not g_empty.requires_grad
    assert g_empty.grad_fn is None
    rows, empty_rows = leaf(T, sample(rng, (2, 3))), leaf(T, np.zeros((0, 3)))
    _, g_rows = T.autograd.grad(T.cat([rows, empty_rows]).pow(2).sum(), [rows, empty_rows],
                                create_graph=True)
    assert tuple(g_rows.shape) == (0, 3) and g_rows.grad_fn.name() == "SliceBackward0"


def test_cat_of_legacy_empty_tensors_only_is_empty(T):
    out = T.cat([T.zeros(0), T.zeros(0, dtype=T.float64)], 5)
    assert tuple(out.shape) == (0,)
    assert out.dtype == T.float64


# --------------------------------------------------------------------------------------------
# Gradients: gradcheck, gradgradcheck, and multi-output ops with some outputs unused
# --------------------------------------------------------------------------------------------


def check_grads(T, fn, *arrays):
    inputs = tuple(leaf(T, a) for a in arrays)
    assert T.autograd.gradcheck(fn, inputs)
    assert T.autograd.gradgradcheck(fn, inputs)


# id, fn(T, x) on x of shape (2, 3, 4)
ONE_INPUT_GRADS = [
    ("permute", lambda T, x: x.permute(2, 0, 1)),
    ("permute_neg", lambda T, x: T.permute(x, (-1, -3, -2))),
    ("mT", lambda T, x: x.mT),
    ("matrix.T", lambda T, x: x.flatten(0, 1).T),
    ("flatten", lambda T, x: x.flatten()),
    ("flatten_1", lambda T, x: x.flatten(1)),
    ("strided.flatten", lambda T, x: x.transpose(0, 1).flatten()),
    ("permuted.flatten_1_2", lambda T, x: x.permute(2, 0, 1).flatten(1, 2)),
    ("view_as", lambda T, x: x.view_as(T.zeros(6, 4))),
    ("reshape_as_strided", lambda T, x: x.mT.reshape_as(T.zeros(6, 4))),
    ("expand_as", lambda T, x: x.sum(1, keepdim=True).expand_as(x)),
    ("contiguous", lambda T, x: x.transpose(0, 2).contiguous()),
    ("split", lambda T, x: x.split(3, 2)),
    ("split_list", lambda T, x: x.split([2, 0, 2], -1)),
    ("chunk", lambda T, x: x.chunk(2, 1)),
    ("unbind", lambda T, x: x.unbind(1)),
    ("split_one_used", lambda T, x: x.split(2, 1)[1] * 2),
    ("chunk_last_used", lambda T, x: x.chunk(3, 2)[-1].exp()),
    ("unbind_one_used", lambda T, x: x.unbind(-1)[2]),
    ("cat_with_itself", lambda T, x: T.cat([x, x * x], 1)),
    ("stack_with_itself", lambda T, x: T.stack([x, x.exp()], 2)),
    ("bmm_with_itself", lambda T, x: T.bmm(x, x.mT)),
]


@pytest.mark.parametrize("fn", [pytest.param(r[1], id=r[0]) for r in ONE_INPUT_GRADS])
def test_one_input_gradcheck(T, rng, fn):
    check_grads(T, lambda x: fn(T, x), sample(rng, (2, 3, 4)))


@pytest.mark.parametrize(
    "fn,shapes",
    [
        pytest.param(lambda T, a, b: T.cat([a, b], 1), ((2, 3), (2, 2)), id="cat"),
        pytest.param(lambda T, a, b: T.cat([a, b, a], -1), ((2, 3), (2, 1)), id="cat_three"),
        pytest.param(lambda T, a, b: T.concat([a, b]), ((1, 3), (2, 3)), id="concat"),
        pytest.param(lambda T, a, b: T.stack([a, b], 1), ((2, 3), (2, 3)), id="stack"),
        pytest.param(lambda T, a, b: T.bmm(a, b), ((2, 3, 4), (2, 4, 2)), id="bmm"),
        pytest.param(lambda T, a, b: a.bmm(b), ((1, 2, 3), (1, 3, 1)), id="x.bmm"),
    ],
)
def test_two_input_gradcheck(T, rng, fn, shapes):
    check_grads(T, lambda a, b: fn(T, a, b), *(sample(rng, s) for s in shapes))


def shapes_id(pair):
    return "@".join("x".join(map(str, s)) for s in pair)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=shapes_id)
def test_matmul_gradcheck(T, rng, shapes):
    check_grads(T, lambda a, b: a @ b, *(sample(rng, s) for s in shapes))


@pytest.mark.parametrize("constant", ["a", "b"])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=shapes_id)
def test_matmul_gradcheck_with_one_constant_operand(T, rng, shapes, constant):
    # A constant operand changes the way torch takes (fold into mm, or broadcast and bmm).
    a_np, b_np = (sample(rng, s) for s in shapes)
    if constant == "a":
        a = T.tensor(a_np)
        check_grads(T, lambda b: a @ b, b_np)
    else:
        b = T.tensor(b_np)
        check_grads(T, lambda a: a @ b, a_np)


def test_matmul_gradcheck_with_a_strided_operand(T, rng):
    b = T.tensor(sample(rng, (4, 2)))
    check_grads(T, lambda a: a.transpose(0, 1) @ b, sample(rng, (3, 2, 4)))
    check_grads(T, lambda a: a.permute(1, 0, 2) @ b.unbind(1)[0], sample(rng, (3, 2, 4)))


@pytest.mark.parametrize("shapes,read,names", [
    pytest.param(((3, 2), (4, 2)), lambda a, b: a @ b.t(), ["MmBackward0", "TBackward0"],
                 id="transposed_mat2"),
    pytest.param(((2, 3), (4, 2)), lambda a, b: a.t() @ b.t(), ["TBackward0", "TBackward0"],
                 id="both_transposed"),
    pytest.param(((3, 1), (1, 1)), lambda a, b: a @ b, ["MmBackward0", "TBackward0"],
                 id="one_by_one_mat2"),
    pytest.param(((3, 1), (1, 4)), lambda a, b: a @ b, ["MmBackward0", "MmBackward0"],
                 id="row_major"),
])
def test_mm_gradient_of_a_column_major_input_is_a_transposed_product(T, rng, shapes, read,
                                                                     names):
    # torch computes it as (b @ grad.t()).t() (or (grad.t() @ a).t()), in the input's order
    a_np, b_np = sample(rng, shapes[0]), sample(rng, shapes[1])
    a, b = leaf(T, a_np), leaf(T, b_np)
    out = read(a, b)
    g = sample(rng, tuple(out.shape))
    ga, gb = T.autograd.grad(out, [a, b], T.tensor(g), create_graph=True)
    assert [ga.grad_fn.name(), gb.grad_fn.name()] == names
    (ga_plain, gb_plain) = T.autograd.grad(read(a, b), [a, b], T.tensor(g))
    np.testing.assert_allclose(to_np(ga), to_np(ga_plain), rtol=1e-15)
    np.testing.assert_allclose(to_np(gb), to_np(gb_plain), rtol=1e-15)


@pytest.mark.parametrize("bias_shape,bias_node", [((2,), "ViewBackward0"),
                                                   ((3, 1), "SumBackward1")])
def test_addmm_broadcast_bias_gradient_is_summed_as_any_broadcast(T, rng, bias_shape,
                                                                  bias_node):
    # torch's sum_to: the kept-dim sum, viewed to the bias' shape when dims were added
    b, m1, m2 = (leaf(T, sample(rng, s)) for s in (bias_shape, (3, 2), (2, 2)))
    out = T.addmm(b, m1, m2)
    g = leaf(T, sample(rng, (3, 2)))
    (gb,) = T.autograd.grad(out, [b], g, create_graph=True)
    assert gb.grad_fn.name() == bias_node
    np.testing.assert_allclose(to_np(gb), to_np(g).sum(0 if len(bias_shape) == 1 else 1)
                               .reshape(bias_shape))


def test_addmm_of_one_by_one_matrices_computes_their_gradients_transposed(T, rng):
    b, m1, m2 = (leaf(T, sample(rng, (1, 1))) for _ in range(3))
    g = leaf(T, sample(rng, (1, 1)))
    _, g1, g2 = T.autograd.grad(T.addmm(b, m1, m2), [b, m1, m2], g, create_graph=True)
    assert (g1.grad_fn.name(), g2.grad_fn.name()) == ("TBackward0", "TBackward0")


@pytest.mark.parametrize("join,names", [
    pytest.param(lambda T, a, b: T.cat([a, b]), "SliceBackward0", id="cat"),
    pytest.param(lambda T, a, b: T.cat([a, b], 1), "SliceBackward0", id="cat_1"),
    pytest.param(lambda T, a, b: T.stack([a, b]), "SelectBackward0", id="stack"),
    pytest.param(lambda T, a, b: T.stack([a, b], -1), "SelectBackward0", id="stack_-1"),
])
def test_join_gradients_are_narrows_and_selects_of_the_gradient(T, rng, join, names):
    a, b = leaf(T, sample(rng, (2, 3))), leaf(T, sample(rng, (2, 3)))
    out = join(T, a, b)
    g = leaf(T, sample(rng, tuple(out.shape)))
    ga, gb = T.autograd.grad(out, [a, b], g, create_graph=True)
    assert ga.grad_fn.name() == gb.grad_fn.name() == names
    (ga_plain, gb_plain) = T.autograd.grad(join(T, a, b), [a, b], g)
    np.testing.assert_array_equal(to_np(ga), to_np(ga_plain))
    np.testing.assert_array_equal(to_np(gb), to_np(gb_plain))


@pytest.mark.parametrize("shape,name", [((2, 3), None), ((2, 1, 3, 1), "UnsqueezeBackward0")])
def test_squeeze_gradient_unsqueezes_each_size_one_dim(T, rng, shape, name):
    x = leaf(T, sample(rng, shape))
    g = leaf(T, sample(rng, (2, 3)))
    (gx,) = T.autograd.grad(x.squeeze(), [x], g, create_graph=True)
    assert (gx.grad_fn.name() if gx.grad_fn is not None else None) == name
    assert tuple(gx.shape) == shape


@pytest.mark.parametrize("shape,dim,name", [
    ((), 0, None), ((), -1, None), ((), (0,), None), ((), (), None),
    ((2, 3), 0, None), ((2, 3), (0, 1), None),
    ((1, 3), 0, "UnsqueezeBackward0"), ((2, 1), -1, "UnsqueezeBackward0"),
    ((1, 3, 1), (2, 0), "UnsqueezeBackward0"), ((1, 3, 1), (0, 1), "UnsqueezeBackward0"),
])
def test_squeeze_of_a_dim_gradient_unsqueezes_only_the_squeezed_dims(T, rng, shape, dim, name):
    # torch's unsqueeze_to: the gradient itself when no named dim had size 1 (a 0-d input)
    x = leaf(T, sample(rng, shape))
    out = x.squeeze(dim)
    g = leaf(T, sample(rng, tuple(out.shape)))
    (gx,) = T.autograd.grad(out, [x], g, create_graph=True)
    assert (gx.grad_fn.name() if gx.grad_fn is not None else None) == name
    assert tuple(gx.shape) == shape
    np.testing.assert_array_equal(to_np(gx), to_np(g).reshape(shape))


def test_narrow_is_a_slice_view(T, rng):
    x = leaf(T, sample(rng, (3, 4)))
    y = x.narrow(1, -3, 2)
    assert y.grad_fn.name() == "SliceBackward0"
    assert y._base is x
    np.testing.assert_array_equal(to_np(y), to_np(x)[:, 1:3])
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(3\) exceeds dimension size"):
        x.narrow(0, 2, 3)


@pytest.mark.parametrize(
    "pick,mask",
    [
        pytest.param(lambda T, x: x.split(2, 1)[1], [0, 0, 1, 1, 0], id="split_middle"),
        pytest.param(lambda T, x: x.split(2, 1)[2], [0, 0, 0, 0, 1], id="split_last"),
        pytest.param(lambda T, x: x.split([1, 4], 1)[0], [1, 0, 0, 0, 0], id="split_list"),
        pytest.param(lambda T, x: x.chunk(3, -1)[0], [1, 1, 0, 0, 0], id="chunk_first"),
        pytest.param(lambda T, x: x.unbind(1)[3], [0, 0, 0, 1, 0], id="unbind"),
    ],
)
def test_only_the_used_output_of_a_multi_output_op_gets_gradient(T, rng, pick, mask):
    x = leaf(T, sample(rng, (2, 5)))
    (pick(T, x) * 3).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), 3.0 * np.array([mask, mask], dtype=float))


def test_two_used_outputs_of_split_both_reach_the_input(T, rng):
    x = leaf(T, sample(rng, (2, 5)))
    first, _, last = x.split(2, 1)
    (first.sum() + 2 * last.sum()).backward()
    np.testing.assert_array_equal(to_np(x.grad), np.array([[1, 1, 0, 0, 2]] * 2, dtype=float))


def test_permute_gradient_is_permuted_back(T, rng):
    x = leaf(T, sample(rng, (2, 3, 4)))
    g = sample(rng, (4, 2, 3))
    x.permute(2, 0, 1).backward(T.tensor(g))
    np.testing.assert_array_equal(to_np(x.grad), g.transpose(1, 2, 0))


# --------------------------------------------------------------------------------------------
# Errors, raised before any work
# --------------------------------------------------------------------------------------------


def f64(*shape):
    return np.zeros(shape)


DIM_RANGE = "Dimension out of range"
CAT_SIZES = (
    "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for "
    "tensor number 1 in the list."
)

# id, fn(T), exception type, message pattern (matched with re.search)
ERROR_CASES = [
    ("permute_repeated", lambda T: T.zeros(2, 3, 4).permute(0, 0, 1), RuntimeError,
     "duplicate dims are not allowed"),
    ("permute_too_few", lambda T: T.zeros(2, 3, 4).permute(0, 1), RuntimeError,
     r"input.dim\(\) = 3 is not equal to len\(dims\) = 2"),
    ("permute_too_many", lambda T: T.permute(T.zeros(2, 3), (0, 1, 2)), RuntimeError,
     "does not match the length of the desired ordering of dimensions"),
    ("permute_out_of_range", lambda T: T.zeros(2, 3, 4).permute(0, 1, 3), IndexError,
     DIM_RANGE),
    ("permute_out_of_range_neg", lambda T: T.zeros(2, 3, 4).permute(-4, 0, 1), IndexError,
     DIM_RANGE),
    ("permute_no_dims", lambda T: T.zeros(2).permute(), TypeError, "missing 1 required"),
    ("mT_of_1d", lambda T: T.zeros(3).mT, RuntimeError,
     "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."),
    ("flatten_out_of_range", lambda T: T.zeros(2, 3).flatten(2), IndexError, DIM_RANGE),
    ("flatten_0d_out_of_range", lambda T: T.zeros(()).flatten(1), IndexError,
     r"range of \[-1, 0\], but got 1"),
    ("flatten_start_after_end", lambda T: T.zeros(2, 3, 4).flatten(2, 1), RuntimeError,
     "start_dim cannot come after end_dim"),
    ("view_as_bad_size", lambda T: T.zeros(2, 3).view_as(T.zeros(5)), RuntimeError,
     "is invalid for input of size 6"),
    ("view_as_strided", lambda T: T.zeros(2, 3).t().view_as(T.zeros(6)), RuntimeError,
     "view size is not compatible"),
    ("view_as_not_a_tensor", lambda T: T.zeros(2, 3).view_as((6,)), TypeError,
     "must be Tensor, not tuple"),
    ("reshape_as_bad_size", lambda T: T.zeros(2, 3).reshape_as(T.zeros(4)), RuntimeError,
     "is invalid for input of size 6"),
    ("expand_as_bad_size", lambda T: T.zeros(2, 3, 4).expand_as(T.zeros(3, 4, 5)),
     RuntimeError, r"expanded size of the tensor \(5\) must match the existing size \(4\) at "
     "non-singleton dimension 2"),
    ("chunk_0", lambda T: T.zeros(4).chunk(0), RuntimeError,
     "chunk expects `chunks` to be greater than 0, got: 0"),
    ("chunk_negative", lambda T: T.chunk(T.zeros(4), -2), RuntimeError,
     "greater than 0, got: -2"),
    ("chunk_0d", lambda T: T.zeros(()).chunk(2), RuntimeError,
     "chunk expects at least a 1-dimensional tensor"),
    ("chunk_out_of_range", lambda T: T.zeros(2, 3).chunk(2, 2), IndexError, DIM_RANGE),
    ("split_sizes_sum", lambda T: T.zeros(2, 3, 4).split([1, 2], 2), RuntimeError,
     r"split_sizes to sum exactly to 4 \(input tensor's size at dimension 2\), but got "
     r"split_sizes=\[1, 2\]"),
    ("split_sizes_sum_neg_dim", lambda T: T.split(T.zeros(2, 4), [3], -1), RuntimeError,
     r"at dimension -1\), but got split_sizes=\[3\]"),
    ("split_sizes_negative", lambda T: T.zeros(4).split([5, -1]), RuntimeError,
     r"only non-negative entries, but got split_sizes=\[5, -1\]"),
    ("split_size_negative", lambda T: T.zeros(4).split(-1), RuntimeError,
     "split_size be non-negative, but got split_size=-1"),
    ("split_size_0", lambda T: T.zeros(4).split(0), RuntimeError,
     "split_size can only be 0 if dimension size is 0, but got dimension size of 4"),
    ("split_0d", lambda T: T.zeros(()).split(1), RuntimeError,
     "split expects at least a 1-dimensional tensor"),
    ("split_out_of_range", lambda T: T.zeros(2, 3).split(1, 2), IndexError, DIM_RANGE),
    ("split_float", lambda T: T.zeros(4).split(1.5), TypeError, "must be tuple of ints"),
    ("cat_sizes", lambda T: T.cat([T.zeros(2, 2), T.zeros(3, 2)], 1), RuntimeError, CAT_SIZES),
    ("cat_sizes_neg_dim", lambda T: T.cat([T.zeros(2, 2), T.zeros(3, 2)], -1), RuntimeError,
     CAT_SIZES),
    ("cat_ranks", lambda T: T.cat([T.zeros(2, 2), T.zeros(2)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    ("cat_empty_list", lambda T: T.cat([]), ValueError,
     "cat\\(\\): expected a non-empty list of Tensors"),
    ("cat_0d", lambda T: T.cat([T.zeros(2), T.zeros(())]), RuntimeError,
     r"zero-dimensional tensor \(at position 1\) cannot be concatenated"),
    ("cat_out_of_range", lambda T: T.cat([T.zeros(2, 3), T.zeros(2, 3)], 2), IndexError,
     DIM_RANGE),
    ("cat_a_tensor", lambda T: T.cat(T.zeros(2, 3)), TypeError,
     "argument 'tensors' \\(position 1\\) must be tuple of Tensors, not Tensor"),
    ("cat_a_number", lambda T: T.cat([T.zeros(2), 1]), TypeError,
     "expected Tensor as element 1 in argument 0, but got int"),
    ("stack_empty_list", lambda T: T.stack([]), RuntimeError,
     "stack expects a non-empty TensorList"),
    ("stack_sizes", lambda T: T.stack([T.zeros(2), T.zeros(3)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at "
     "entry 1"),
    ("stack_out_of_range", lambda T: T.stack([T.zeros(2), T.zeros(3)], 2), IndexError,
     DIM_RANGE),
    ("unbind_out_of_range", lambda T: T.zeros(2, 3).unbind(2), IndexError, DIM_RANGE),
    ("bmm_2d", lambda T: T.bmm(T.zeros(2, 2), T.zeros(2, 2, 2)), RuntimeError,
     "batch1 must be a 3D tensor"),
    ("bmm_2d_second", lambda T: T.zeros(2, 2, 2).bmm(T.zeros(2, 2)), RuntimeError,
     "batch2 must be a 3D tensor"),
    ("bmm_batch", lambda T: T.bmm(T.zeros(2, 2, 3), T.zeros(3, 3, 2)), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\] but got: "
     r"\[3, 3\]\."),
    ("bmm_dtype", lambda T: T.bmm(T.zeros(2, 2, 3), T.zeros(2, 3, 2, dtype=T.float64)),
     RuntimeError, "expected scalar type Float but found Double"),
    ("bmm_bool", lambda T: T.bmm(T.ones(1, 2, 2, dtype=T.bool), T.ones(1, 2, 2, dtype=T.bool)),
     NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    ("bmm_number", lambda T: T.bmm(T.zeros(1, 2, 2), 1), TypeError,
     "argument 'mat2' \\(position 2\\) must be Tensor, not int"),
    ("mm_dtype", lambda T: T.mm(T.zeros(2, 3, dtype=T.float64), T.zeros(3, 2)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: double != float"),
    ("mm_shape_before_dtype", lambda T: T.mm(T.zeros(2, 3), T.zeros(4, 2, dtype=T.float64)),
     RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"),
    ("mv_dtype", lambda T: T.mv(T.zeros(2, 3), T.zeros(3, dtype=T.float64)), RuntimeError,
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    ("dot_dtype", lambda T: T.dot(T.zeros(3), T.zeros(3, dtype=T.float64)), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    ("matmul_0d", lambda T: T.zeros(2, 3, 4) @ T.zeros(()), RuntimeError,
     "both arguments to matmul need to be at least 1D, but they are 3D and 0D"),
    ("matmul_batch_broadcast", lambda T: T.zeros(2, 3, 4) @ T.zeros(3, 4, 5), RuntimeError,
     r"size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton "
     "dimension 0"),
    ("matmul_batch_broadcast_4d", lambda T: T.zeros(2, 2, 3, 4) @ T.zeros(3, 4, 5),
     RuntimeError, r"size of tensor a \(2\) must match the size of tensor b \(3\) at "
     "non-singleton dimension 1"),
    ("matmul_3d@3d_inner", lambda T: T.zeros(2, 3, 4) @ T.zeros(2, 5, 6), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] but got: "
     r"\[2, 5\]\."),
    ("matmul_3d@2d_inner", lambda T: T.zeros(2, 3, 4) @ T.zeros(5, 6), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(6x4 and 5x6\)"),
    ("matmul_2d@3d_inner", lambda T: T.zeros(3, 4) @ T.zeros(2, 5, 6), RuntimeError,
     r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] but got: "
     r"\[2, 5\]\."),
    ("matmul_2d@3d_inner_grad", lambda T: T.zeros(3, 4, requires_grad=True) @ T.zeros(2, 5, 6),
     RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(12x5 and 4x3\)"),
    ("matmul_3d@1d_inner", lambda T: T.zeros(2, 3, 4) @ T.zeros(5), RuntimeError,
     r"size mismatch, got input \(6\), mat \(6x4\), vec \(5\)"),
    ("matmul_1d@3d_inner_grad", lambda T: T.zeros(4, requires_grad=True) @ T.zeros(2, 5, 6),
     RuntimeError, r"size mismatch, got input \(12\), mat \(12x5\), vec \(4\)"),
    ("matmul_3d_dtype", lambda T: T.zeros(2, 3, 4) @ T.zeros(2, 4, 6, dtype=T.float64),
     RuntimeError, "expected scalar type Float but found Double"),
    ("matmul_3d@2d_dtype", lambda T: T.zeros(2, 3, 4) @ T.zeros(4, 6, dtype=T.float64),
     RuntimeError, "expected m1 and m2 to have the same dtype, but got: float != double"),
    ("matmul_bool_3d", lambda T: T.ones(2, 3, 4, dtype=T.bool) @ T.ones(2, 4, 6, dtype=T.bool),
     NotImplementedError, "\"bmm\" not implemented for 'Bool'"),
    ("matmul_number", lambda T: T.matmul(T.zeros(2, 3, 4), 1), TypeError,
     "argument 'other' \\(position 2\\) must be Tensor, not int"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*r[1:], id=r[0]) for r in ERROR_CASES])
def test_bad_input_raises_torchs_error(T, fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(T)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x @ T.zeros(3, 4, 5, dtype=T.float64), id="matmul_batches"),
        pytest.param(lambda T, x: x @ T.zeros(5, 6, dtype=T.float64, requires_grad=True),
                     id="matmul_fold"),
        pytest.param(lambda T, x: T.cat([x, T.zeros(2, 4, 4, dtype=T.float64)], 2), id="cat"),
        pytest.param(lambda T, x: x.split([1, 1], 1), id="split"),
    ],
)
def test_an_error_leaves_the_inputs_as_they_were(T, rng, fn):
    x = leaf(T, sample(rng, (2, 3, 4)))
    before = to_np(x).copy()
    with pytest.raises(RuntimeError):
        fn(T, x)
    assert x.grad is None and x.grad_fn is None
    np.testing.assert_array_equal(to_np(x), before)


def test_flip_reverses_along_dims_and_its_gradient_flips_back(T):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=T.float64, requires_grad=True)
    y = x.flip(-1)
    assert y.tolist() == [[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]
    assert type(y.grad_fn).__name__ == "FlipBackward0"
    assert y.grad_fn._saved_dims == (2**64 - 1,)
    assert T.flip(x, (0, 1)).tolist() == [[6.0, 5.0, 4.0], [3.0, 2.0, 1.0]]
    assert T.autograd.gradgradcheck(lambda x: x.flip(0, 1), (x,))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.flip(0, 0)


def test_cumsum_gradient_with_create_graph_is_a_flipped_running_sum(T):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    (g,) = T.autograd.grad(x.cumsum(1).pow(2).sum(), [x], create_graph=True)
    assert type(g.grad_fn).__name__ == "FlipBackward0"
    assert g.tolist() == [[20.0, 18.0, 12.0], [56.0, 48.0, 30.0]]
