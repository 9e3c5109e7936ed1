"""Views after in-place ops, and the remaining nodes of in-place and composite ops."""

from __future__ import annotations

import numpy as np
import pytest


def node_names(t) -> set:
    names, stack, seen = set(), [t.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(type(n).__name__)
        stack.extend(f for f, _ in n.next_functions)
    return names


def test_a_view_reads_its_history_from_the_base_after_another_view_changed_it(T):
    x = T.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    z = x * 1
    row = z[0]
    tail = z[0, 1:]
    tail.mul_(2)
    fn = row.grad_fn
    assert type(fn).__name__ == "AsStridedBackward0"
    assert tuple(fn._saved_size) == (3,) and tuple(fn._saved_stride) == (1,)
    assert fn._saved_storage_offset == 0
    row.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 2.0, 2.0]])


def test_fill_with_a_tensor_value_sends_the_summed_gradient_to_the_value(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = T.tensor(5.0, requires_grad=True)
    y = x * 1
    y.fill_(v)
    assert type(y.grad_fn).__name__ == "FillBackward3"
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad.item() == 6.0
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_squeeze_without_a_dim(T):
    x = T.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x.squeeze()
    assert type(y.grad_fn).__name__ == "SqueezeBackward0"
    assert tuple(y.grad_fn._saved_self_sym_sizes) == (1, 3)
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0]]


def test_label_smoothing_masks_the_ignored_targets_with_masked_fill(T):
    logits = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    loss = T.nn.functional.cross_entropy(logits, T.tensor([0, 2]), label_smoothing=0.1)
    names = node_names(loss)
    assert {"MaskedFillBackward0", "LogSoftmaxBackward0", "NllLossBackward0"} <= names


def test_scatter_of_a_tensor_and_of_a_number(T):
    x = T.zeros(3, 3, dtype=T.float64, requires_grad=True)
    src = T.ones(1, 3, dtype=T.float64, requires_grad=True)
    idx = T.tensor([[0, 1, 2]])
    weights = T.arange(9.0, dtype=T.float64).reshape(3, 3)
    y = x.scatter(0, idx, src)
    assert type(y.grad_fn).__name__ == "ScatterBackward0"
    assert len(y.grad_fn.next_functions) == 2
    (y * weights).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 2], [3, 0, 5], [6, 7, 0]])
    np.testing.assert_allclose(src.grad.numpy(), [[0, 4, 8]])
    z = x.scatter(0, idx, 5.0)
    assert type(z.grad_fn).__name__ == "ScatterBackward1"
    assert len(z.grad_fn.next_functions) == 1
    assert T.autograd.gradcheck(lambda a, b: a.scatter(0, idx, b), (x, src))
    assert T.autograd.gradgradcheck(lambda a, b: a.scatter(0, idx, b), (x, src))


@pytest.mark.ext_only
def test_a_builtin_op_class_applies_like_its_method():
    import ext
    from ext.functions.activation import Softmax
    from ext.functions.pointwise.arithmetic import Mul

    x = ext.tensor([1.0, 2.0], requires_grad=True)
    y = Mul.apply(x, x)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    s = Softmax.apply(x, 0)
    assert type(s.grad_fn).__name__ == "SoftmaxBackward0"
    np.testing.assert_allclose(s.detach().numpy(), np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum())


def test_mark_dirty_on_a_view_gives_its_base_copy_slices(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x.clone()
    v = b[1:3]
    out = Double.apply(v)
    assert out is v
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert [type(f).__name__ for f, _ in b.grad_fn.next_functions] == ["CloneBackward0"]
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (b * T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 4.0, 6.0, 4.0]
    assert b.tolist() == [1.0, 4.0, 6.0, 4.0]


def test_relu_gradient_with_create_graph_is_a_threshold_backward_node(T):
    x = T.tensor([0.5, -1.5], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(x.relu().sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "ThresholdBackwardBackward0"
    assert g.grad_fn._saved_threshold == 0
    assert [type(f).__name__ if f else None for f, _ in g.grad_fn.next_functions] == [
        None, "ReluBackward0"]
    assert g.requires_grad and g.tolist() == [1.0, 0.0]


def test_nan_gradients_do_not_leak_into_masked_places(T):
    x = T.tensor([-1.0, 2.0], requires_grad=True)
    (x.relu() * float("nan")).sum().backward()
    assert x.grad[0].item() == 0.0
    y = T.tensor([-1.0, 2.0], requires_grad=True)
    (y.max() * float("nan")).backward()
    assert y.grad[0].item() == 0.0


def test_squeeze_with_a_tuple_of_dims(T):
    x = T.ones(1, 3, 1, requires_grad=True)
    y = x.squeeze((0, 2))
    assert type(y.grad_fn).__name__ == "SqueezeBackward2"
    assert tuple(y.grad_fn._saved_dim) == (0, 2)
    assert tuple(y.shape) == (3,)
    y.sum().backward()
    assert tuple(x.grad.shape) == (1, 3, 1)
    assert tuple(T.ones(2, 1).squeeze((0,)).shape) == (2, 1)


@pytest.mark.parametrize("shape,dims,named", [((1, 1), (0, -2), 0), ((1, 1, 1), (2, 1, -1), 2)])
def test_squeeze_refuses_a_dim_named_twice(T, shape, dims, named):
    x = T.ones(shape)
    with pytest.raises(RuntimeError, match=f"dim {named} appears multiple times in the list"):
        x.squeeze(dims)
