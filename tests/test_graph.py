"""The graph objects (Nodes) that autograd records: names, edges, leaf accumulators, metadata."""

from __future__ import annotations

import pytest

UINT64_MAX = 2**64 - 1


def leaf(T, values=(1.0, 2.0)):
    return T.tensor(list(values), requires_grad=True)


def accumulator(T, x):
    """The AccumulateGrad node of leaf ``x``, reached through a fresh ``x * 2``."""
    return (x * 2).grad_fn.next_functions[0][0]


def split_function(T):
    class Split(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    return Split


# -------------------- names


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda x: x + x, "AddBackward0"),
        (lambda x: x * 2, "MulBackward0"),
        (lambda x: x - 1, "SubBackward0"),
        (lambda x: x / 2, "DivBackward0"),
        (lambda x: -x, "NegBackward0"),
        (lambda x: x.exp(), "ExpBackward0"),
        (lambda x: x.sin(), "SinBackward0"),
        (lambda x: x.sum(), "SumBackward0"),
        (lambda x: x.sum(0), "SumBackward1"),
        (lambda x: x.mean(), "MeanBackward0"),
        (lambda x: x.reshape(2, 1), "ViewBackward0"),
        (lambda x: x.clone(), "CloneBackward0"),
    ],
)
def test_grad_fn_name_matches_the_op(T, build, name):
    y = build(leaf(T))
    assert y.grad_fn.name() == name


def test_grad_fn_class_name_equals_its_name(T):
    y = leaf(T).exp()
    assert type(y.grad_fn).__name__ == "ExpBackward0"
    assert type(y.grad_fn).__name__ == y.grad_fn.name()


def test_leaf_has_no_grad_fn(T):
    x = leaf(T)
    assert x.grad_fn is None
    assert x.is_leaf


def test_grad_fn_is_a_node(T):
    x = leaf(T)
    y = x.exp()
    assert isinstance(y.grad_fn, T.autograd.graph.Node)
    assert isinstance(accumulator(T, x), T.autograd.graph.Node)


def test_custom_function_node_is_a_node(T):
    a, _ = split_function(T).apply(leaf(T))
    assert isinstance(a.grad_fn, T.autograd.graph.Node)


# -------------------- next_functions


def test_next_functions_is_a_tuple_of_pairs(T):
    y = leaf(T).exp()
    nf = y.grad_fn.next_functions
    assert isinstance(nf, tuple)
    assert len(nf) == 1
    assert isinstance(nf[0], tuple)
    assert nf[0][1] == 0


def test_next_functions_follow_the_chain(T):
    x = leaf(T)
    a = x.exp()
    b = a.sin()
    assert b.grad_fn.next_functions[0][0] is a.grad_fn
    assert a.grad_fn.next_functions[0][0].name() == T.__name__ + "::autograd::AccumulateGrad"


def test_python_number_operand_appears_as_none_edge(T):
    x = leaf(T)
    nf = (x * 2).grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0] is accumulator(T, x)
    assert nf[1] == (None, 0)


def test_reflected_python_number_operand_appears_second(T):
    x = leaf(T)
    nf = (1 + x).grad_fn.next_functions
    assert nf[0][0] is accumulator(T, x)
    assert nf[1] == (None, 0)


def test_constant_tensor_operand_appears_as_none_edge(T):
    x = leaf(T)
    c = T.tensor([3.0, 4.0])
    assert (x * c).grad_fn.next_functions[1] == (None, 0)
    assert (c * x).grad_fn.next_functions[0] == (None, 0)
    assert (c - x).grad_fn.next_functions[0] == (None, 0)


def test_edges_keep_operand_order(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    nf = (x * w).grad_fn.next_functions
    assert nf[0][0].variable is x
    assert nf[1][0].variable is w


def test_same_operand_twice_gives_two_edges_to_one_node(T):
    x = leaf(T)
    nf = (x * x).grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0] is nf[1][0]


# -------------------- AccumulateGrad


def test_accumulate_grad_name(T):
    acc = accumulator(T, leaf(T))
    assert acc.name() == T.__name__ + "::autograd::AccumulateGrad"
    assert type(acc).__name__ == "AccumulateGrad"


def test_accumulate_grad_variable_is_the_leaf(T):
    x = leaf(T)
    assert accumulator(T, x).variable is x


def test_accumulate_grad_has_no_next_functions(T):
    assert accumulator(T, leaf(T)).next_functions == ()


def test_accumulate_grad_is_shared_by_graphs_of_a_living_leaf(T):
    x = leaf(T)
    y1 = x * 2
    y2 = x.exp()
    acc1 = y1.grad_fn.next_functions[0][0]
    acc2 = y2.grad_fn.next_functions[0][0]
    assert acc1 is acc2


def test_accumulate_grad_differs_between_leaves(T):
    x = leaf(T)
    w = leaf(T)
    nf = (x * w).grad_fn.next_functions
    assert nf[0][0] is not nf[1][0]


def test_accumulate_grad_sequence_nr_is_max(T):
    assert accumulator(T, leaf(T))._sequence_nr() == UINT64_MAX


# -------------------- metadata


def test_metadata_starts_as_an_empty_dict(T):
    y = leaf(T).exp()
    assert isinstance(y.grad_fn.metadata, dict)
    assert y.grad_fn.metadata == {}


def test_metadata_persists_on_the_node(T):
    y = leaf(T).exp()
    y.grad_fn.metadata["tag"] = "exp"
    assert y.grad_fn.metadata == {"tag": "exp"}
    assert y.grad_fn.metadata is y.grad_fn.metadata


def test_accumulate_grad_metadata_persists_across_graphs(T):
    x = leaf(T)
    y = x * 2
    y.grad_fn.next_functions[0][0].metadata["tag"] = "leaf"
    z = x.exp()
    assert z.grad_fn.next_functions[0][0].metadata == {"tag": "leaf"}


# -------------------- sequence numbers


def test_sequence_nr_grows_by_one_per_node(T):
    x = leaf(T)
    a = x.exp()
    b = a.sin()
    c = b.cos()
    n = a.grad_fn._sequence_nr()
    assert b.grad_fn._sequence_nr() == n + 1
    assert c.grad_fn._sequence_nr() == n + 2


def test_sequence_nr_counts_binary_and_reduction_nodes(T):
    x = leaf(T)
    a = x * 2
    b = a + x
    c = b.sum()
    n = a.grad_fn._sequence_nr()
    assert [b.grad_fn._sequence_nr(), c.grad_fn._sequence_nr()] == [n + 1, n + 2]


def test_sequence_nr_counts_custom_function_nodes(T):
    x = leaf(T)
    a = x.exp()
    b, _ = split_function(T).apply(a)
    c = b.sin()
    n = a.grad_fn._sequence_nr()
    assert b.grad_fn._sequence_nr() == n + 1
    assert c.grad_fn._sequence_nr() == n + 2


# -------------------- output_nr


def test_leaf_and_single_output_have_output_nr_zero(T):
    x = leaf(T)
    assert x.output_nr == 0
    assert x.exp().output_nr == 0


def test_outputs_of_a_multi_output_function_are_numbered(T):
    a, b = split_function(T).apply(leaf(T))
    assert a.grad_fn is b.grad_fn
    assert a.output_nr == 0
    assert b.output_nr == 1


def test_edges_to_a_multi_output_function_carry_output_nr(T):
    a, b = split_function(T).apply(leaf(T))
    nf = (b * a).grad_fn.next_functions
    assert nf == ((b.grad_fn, 1), (a.grad_fn, 0))
