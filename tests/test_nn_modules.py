"""ext.nn: Module registration, traversal, modes, state_dict, hooks (in torch's order), repr,
containers, layers, losses and init, as torch.nn.

Every test runs on ``ext`` and on ``torch``. Weights are built in NumPy and copied into both
backends; expected text uses ``T.__name__`` where torch prints ``torch``.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from helpers import leaf, sample, to_np


def set_weights(T, module, rng):
    """Give every parameter of ``module`` NumPy-drawn values (the backends' RNGs differ)."""
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(sample(rng, tuple(p.shape))))


def small_model(T):
    nn = T.nn
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(),
                         nn.Sequential(nn.Linear(3, 3), nn.Tanh()), nn.Linear(3, 1))


class Block:
    """A module class per backend: a Linear and a buffer, with a custom forward."""

    @staticmethod
    def make(T):
        class Block(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = T.nn.Linear(2, 2)
                self.register_buffer("scale", T.ones(2))
                self.register_buffer("scratch", T.zeros(1), persistent=False)

            def forward(self, x):
                return self.lin(x) * self.scale

        return Block()


# ---------------------------------------------------------------------------------- Parameter
def test_parameter_is_a_leaf_that_requires_grad(T):
    p = T.nn.Parameter(T.ones(2))
    assert isinstance(p, T.nn.Parameter) and isinstance(p, T.Tensor)
    assert p.requires_grad and p.is_leaf
    assert not T.nn.Parameter(T.ones(2), requires_grad=False).requires_grad
    assert T.nn.Parameter().shape == (0,)


def test_ops_on_parameters_return_plain_tensors(T):
    p = T.nn.Parameter(T.ones(2, 2))
    for t in (p * 2, p + 0, p.detach(), p.data, p.clone(), p[0], p.view(4), p.t(), p @ p):
        assert isinstance(t, T.Tensor) and not isinstance(t, T.nn.Parameter)
    assert not isinstance(T.ones(1), T.nn.Parameter)


def test_parameter_shares_storage_with_its_data(T):
    t = T.zeros(2)
    p = T.nn.Parameter(t)
    with T.no_grad():
        p.add_(1)
    assert to_np(t).tolist() == [1.0, 1.0] and t._version == p._version == 1


def test_parameter_of_integers_cannot_require_grad(T):
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        T.nn.Parameter(T.tensor([1, 2]))


# ---------------------------------------------------------------------------------- registration
def test_named_parameters_follow_registration_order_and_nesting(T):
    m = small_model(T)
    assert [n for n, _ in m.named_parameters()] == [
        "0.weight", "0.bias", "2.0.weight", "2.0.bias", "3.weight", "3.bias"]
    assert [tuple(p.shape) for p in m.parameters()] == [(3, 2), (3,), (3, 3), (3,), (1, 3), (1,)]
    assert list(m.parameters(recurse=False)) == []
    assert [n for n, _ in m[0].named_parameters(prefix="first")] == ["first.weight", "first.bias"]


def test_modules_children_and_their_names(T):
    m = small_model(T)
    assert [n for n, _ in m.named_children()] == ["0", "1", "2", "3"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "Sequential", "Linear"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1", "2", "2.0", "2.1", "3"]
    assert len(list(m.modules())) == 7 and next(m.modules()) is m


def test_shared_modules_and_parameters_are_listed_once(T):
    lin = T.nn.Linear(2, 2)
    m = T.nn.Sequential(lin, T.nn.ReLU(), lin)
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(m.children())) == 2 and len(list(m.modules())) == 3
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4


def test_buffers_are_state_but_not_parameters(T):
    b = Block.make(T)
    assert [n for n, _ in b.named_parameters()] == ["lin.weight", "lin.bias"]
    assert [n for n, _ in b.named_buffers()] == ["scale", "scratch"]
    assert list(b.state_dict()) == ["scale", "lin.weight", "lin.bias"]
    b.scale = T.full((2,), 3.0)
    assert to_np(b.scale).tolist() == [3.0, 3.0] and "scale" in b._buffers


def test_attribute_assignment_moves_between_kinds(T):
    m = T.nn.Module()
    m.a = T.nn.Linear(1, 1)
    m.b = T.nn.Parameter(T.ones(1))
    m.c = 3
    assert list(m._modules) == ["a"] and list(m._parameters) == ["b"] and m.c == 3
    m.a = T.nn.Parameter(T.zeros(1))
    assert "a" not in m._modules and list(m._parameters) == ["b", "a"]
    m.b = None
    assert m.b is None and list(m.parameters()) == [m.a]
    del m.a
    assert not hasattr(m, "a")


def test_module_errors(T):
    name = T.__name__
    m = T.nn.Linear(2, 2)
    with pytest.raises(TypeError, match=rf"cannot assign '{name}\.FloatTensor' as parameter "
                                        rf"'weight' \({name}\.nn\.Parameter or None expected\)"):
        m.weight = T.ones(2, 2)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.register_buffer("weight", T.ones(1))
    with pytest.raises(KeyError, match='t contain "."'):
        m.register_buffer("a.b", T.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'buf'"):
        m.register_buffer("buf", 3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nothing'"):
        m.nothing
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    with pytest.raises(NotImplementedError,
                       match='Module \\[Module\\] is missing the required "forward" function'):
        T.nn.Module()(1)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        T.nn.Module(3)


def test_assigning_a_module_before_init_fails(T):
    class Bad(T.nn.Module):
        def __init__(self):
            self.lin = T.nn.Linear(1, 1)

    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\)"):
        Bad()


def test_get_submodule(T):
    m = small_model(T)
    assert m.get_submodule("2.0") is m[2][0] and m.get_submodule("") is m
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        m.get_submodule("9")


# ---------------------------------------------------------------------------------- modes, grads
def test_train_and_eval_reach_every_submodule(T):
    m = small_model(T)
    assert m.training and all(c.training for c in m.modules())
    assert m.eval() is m
    assert not any(c.training for c in m.modules())
    m.train()
    assert all(c.training for c in m.modules())


def test_requires_grad_and_zero_grad(T, rng):
    m = small_model(T)
    m(T.tensor(sample(rng, (4, 2)), dtype=T.float32)).sum().backward()
    grads = [p.grad for p in m.parameters()]
    assert all(g is not None for g in grads)
    m.zero_grad(set_to_none=False)
    assert all(p.grad is g and not to_np(g).any() for p, g in zip(m.parameters(), grads))
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_apply_visits_children_first(T):
    m = small_model(T)
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Linear", "Tanh", "Sequential", "Linear", "Sequential"]


def test_to_double_and_float_keep_the_parameter_objects(T, rng):
    b = Block.make(T)
    w = b.lin.weight
    b.lin(T.ones(1, 2)).sum().backward()
    assert b.double() is b
    assert b.lin.weight is w and w.dtype == T.float64 and w.grad.dtype == T.float64
    assert b.scale.dtype == T.float64 and isinstance(b.lin.weight, T.nn.Parameter)
    b.to(T.float32)
    assert w.dtype == T.float32
    b.to(T.ones(1, dtype=T.float64))
    assert w.dtype == T.float64
    b.float()
    assert w.dtype == T.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                                        f"dtypes, but got desired dtype={T.__name__}.int64"):
        b.to(T.int64)


def test_deepcopy_copies_parameters_as_parameters(T):
    m = small_model(T)
    c = copy.deepcopy(m)
    assert c[0].weight is not m[0].weight and isinstance(c[0].weight, T.nn.Parameter)
    assert to_np(c[0].weight).tolist() == to_np(m[0].weight).tolist()


# ---------------------------------------------------------------------------------- state_dict
def test_state_dict_holds_detached_aliases_in_order(T):
    m = small_model(T)
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["0.weight", "0.bias", "2.0.weight", "2.0.bias", "3.weight", "3.bias"]
    assert not sd["0.weight"].requires_grad
    with T.no_grad():
        m[0].weight.fill_(2.0)
    assert to_np(sd["0.weight"]).tolist() == [[2.0, 2.0]] * 3
    assert all(v.requires_grad for v in m.state_dict(keep_vars=True).values())


def test_load_state_dict_copies_values_and_reports_all_keys_matched(T, rng):
    a, b = small_model(T), small_model(T)
    set_weights(T, a, rng)
    result = b.load_state_dict(a.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (_, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert to_np(p).tolist() == to_np(q).tolist() and p is not q


def test_load_state_dict_missing_and_unexpected_keys(T):
    m = T.nn.Linear(2, 3)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict({"weight": T.zeros(3, 2), "foo": T.zeros(1)})
    assert str(info.value) == ('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in '
                               'state_dict: "bias". \n\tUnexpected key(s) in state_dict: "foo". ')
    result = m.load_state_dict({"weight": T.zeros(3, 2), "foo": T.zeros(1)}, strict=False)
    assert repr(result) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['foo'])"
    assert type(result).__name__ == "_IncompatibleKeys" and isinstance(result, tuple)
    assert not to_np(m.weight).any()


def test_load_state_dict_size_mismatch(T):
    m = T.nn.Linear(2, 3)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict({"weight": T.zeros(3, 3), "bias": T.zeros(3)})
    assert str(info.value) == (
        f"Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying a "
        f"param with shape {T.__name__}.Size([3, 3]) from checkpoint, the shape in current "
        f"model is {T.__name__}.Size([3, 2]).")


def test_load_state_dict_nested_unexpected_keys_and_buffers(T):
    b = Block.make(T)
    sd = b.state_dict()
    sd["lin.extra"] = T.ones(1)
    sd["other.weight"] = T.ones(1)
    result = b.load_state_dict(sd, strict=False)
    assert result.unexpected_keys == ["other.weight", "lin.extra"]
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        b.load_state_dict([1, 2])


# ---------------------------------------------------------------------------------- forward hooks
def test_forward_pre_hook_replaces_args_and_forward_hook_replaces_output(T):
    lin = T.nn.Identity()
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    h2 = lin.register_forward_hook(lambda m, args, out: out + 1)
    assert to_np(lin(T.tensor([1.0]))).tolist() == [3.0]
    lin.register_forward_pre_hook(lambda m, args: args[0] * 10)  # a single value is wrapped
    assert to_np(lin(T.tensor([1.0]))).tolist() == [21.0]
    h1.remove()
    h2.remove()
    assert to_np(lin(T.tensor([1.0]))).tolist() == [10.0]


def test_forward_hooks_order_prepend_and_kwargs(T):
    log = []
    m = T.nn.Identity()
    m.register_forward_hook(lambda mod, a, o: log.append("second"))
    m.register_forward_hook(lambda mod, a, o: log.append("first"), prepend=True)
    m.register_forward_pre_hook(lambda mod, a, k: log.append(("pre", sorted(k))),
                                with_kwargs=True)
    m(T.ones(1))
    assert log == [("pre", []), "first", "second"]


def test_forward_pre_hook_with_kwargs_must_return_args_and_kwargs(T):
    m = T.nn.Identity()
    m.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\), but got 5."):
        m(T.ones(1))


def test_always_call_forward_hook_runs_when_forward_raises(T):
    seen = []
    lin = T.nn.Linear(2, 2)
    lin.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        lin(T.ones(1, 3))
    assert seen == [None]


# ---------------------------------------------------------------------------------- backward hooks
def test_module_and_tensor_hooks_fire_in_torchs_order(T):
    # The reference's §2.2 script, with the log kept instead of printed.
    log = []
    lin = T.nn.Linear(2, 2)
    lin.register_forward_pre_hook(lambda m, args: log.append("forward_pre_hook"))
    lin.register_forward_hook(lambda m, args, out: log.append(f"forward_hook {out.grad_fn.name()}"))
    lin.register_full_backward_pre_hook(lambda m, gout: log.append(("pre", to_np(gout[0]))))
    lin.register_full_backward_hook(lambda m, gin, gout: log.append(("full", len(gin))))
    lin.weight.register_hook(lambda g: log.append("weight tensor hook"))
    lin.weight.register_post_accumulate_grad_hook(lambda p: log.append("weight post-acc hook"))
    x = T.ones(1, 2, requires_grad=True)
    x.register_hook(lambda g: log.append("input x tensor hook"))
    out = lin(x)
    assert out.grad_fn.name() == "BackwardHookFunctionBackward"
    assert [f.name() for f, _ in out.grad_fn.next_functions] == ["AddmmBackward0"]
    out.register_hook(lambda g: log.append("output tensor hook"))
    out.sum().backward()
    pre = log.pop(3)
    assert pre[0] == "pre" and pre[1].tolist() == [[1.0, 1.0]]
    assert log == ["forward_pre_hook", "forward_hook AddmmBackward0", "output tensor hook",
                   "weight tensor hook", "weight post-acc hook", ("full", 1),
                   "input x tensor hook"]


def test_full_backward_hook_sees_positional_tensor_inputs_only(T, rng):
    class Scale(T.nn.Module):
        def forward(self, a, b, scale=1.0):
            return a * b * scale, a + b

    seen = []
    m = Scale()
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append((gin, gout)))
    a, b = T.ones(2, requires_grad=True), T.full((2,), 2.0)
    o1, o2 = m(a, b, scale=3.0)
    assert o1.requires_grad and o2.grad_fn.name() == "BackwardHookFunctionBackward"
    (o1.sum() + o2.sum() * 0).backward()
    ((ga, gb), (g1, g2)), = seen
    assert to_np(ga).tolist() == [6.0, 6.0] and to_np(gb).tolist() == [0.0, 0.0]
    assert to_np(g1).tolist() == [1.0, 1.0] and to_np(g2).tolist() == [0.0, 0.0]


def test_backward_hooks_replace_gradients(T, rng):
    lin = T.nn.Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda m, gout: (gout[0] * 10,))
    lin.register_full_backward_hook(lambda m, gin, gout: (gin[0] + 1,))
    set_weights(T, lin, rng)
    x = T.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    w = to_np(lin.weight)
    np.testing.assert_allclose(to_np(x.grad), 10 * w.sum(0, keepdims=True) + 1, rtol=1e-6)
    np.testing.assert_allclose(to_np(lin.bias.grad), [10.0, 10.0])


def test_full_backward_hook_on_outputs_when_no_input_requires_grad(T):
    seen = []
    lin = T.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda m, gin, gout: seen.append((gin, to_np(gout[0]))))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                         "computed with respect to module outputs since no "
                                         "inputs require gradients"):
        lin(T.ones(1, 2)).sum().backward()
    assert seen[0][0] == (None,) and seen[0][1].tolist() == [[1.0, 1.0]]


BACKWARD_HOOK_ERRORS = [
    ("full_count", "register_full_backward_hook",
     lambda T: lambda m, gin, gout: (T.ones(1, 2), T.ones(1, 2)), True, RuntimeError,
     "Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
    ("full_size", "register_full_backward_hook", lambda T: lambda m, gin, gout: (T.ones(3),),
     True, RuntimeError, "hook 'hook' has changed the size of value"),
    ("full_not_tuple", "register_full_backward_hook", lambda T: lambda m, gin, gout: 5, True,
     TypeError, "object of type 'int' has no len()"),
    ("pre_count", "register_full_backward_pre_hook",
     lambda T: lambda m, gout: (T.ones(1, 2), T.ones(1, 2)), True, RuntimeError,
     "Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"),
    ("pre_size", "register_full_backward_pre_hook", lambda T: lambda m, gout: (T.ones(3),), True,
     RuntimeError, "hook 'hook' has changed the size of value"),
    ("no_input_grad", "register_full_backward_hook",
     lambda T: lambda m, gin, gout: (T.ones(1, 2),), False, RuntimeError,
     "Backward hook for Modules where no input requires gradient should always return None or "
     "None for all gradients."),
]


@pytest.mark.parametrize("register,hook,input_grad,exc,message",
                         [pytest.param(*c[1:], id=c[0]) for c in BACKWARD_HOOK_ERRORS])
def test_backward_hooks_that_return_wrong_values(T, register, hook, input_grad, exc, message):
    lin = T.nn.Linear(2, 2)
    getattr(lin, register)(hook(T))
    out = lin(T.ones(1, 2, requires_grad=input_grad)).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=message.replace("(", r"\(").replace(")", r"\)")):
            out.backward()


def test_legacy_and_full_backward_hooks_do_not_mix(T):
    message = "Cannot use both regular backward hooks and full backward hooks on a single Module"
    a, b = T.nn.Linear(1, 1), T.nn.Linear(1, 1)
    a.register_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match=message):
        a.register_full_backward_hook(lambda *args: None)
    b.register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match=message):
        b.register_backward_hook(lambda *args: None)


def test_legacy_backward_hook_sees_the_output_nodes_gradients(T):
    seen = []
    lin = T.nn.Linear(10, 5)
    lin.register_backward_hook(
        lambda m, gin, gout: seen.append(([None if g is None else tuple(g.shape) for g in gin],
                                          tuple(gout[0].shape))))
    with pytest.warns(FutureWarning, match="Using a non-full backward hook when the forward "
                                           "contains multiple autograd Nodes is deprecated"):
        out = lin(T.ones(3, 10))
    out.sum().backward()
    assert seen == [([(5,), None, (10, 5)], (3, 5))]


def test_in_place_on_a_hooked_output_is_refused(T):
    lin = T.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda *args: None)
    y = lin(T.ones(1, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is "
                                           "being modified inplace"):
        y.add_(1)


def test_hooks_without_backward_hooks_leave_the_graph_alone(T):
    lin = T.nn.Linear(2, 2)
    lin.register_forward_hook(lambda *args: None)
    assert lin(T.ones(1, 2, requires_grad=True)).grad_fn.name() == "AddmmBackward0"


def test_removed_backward_hooks_no_longer_fire(T):
    log = []
    lin = T.nn.Linear(2, 2)
    h1 = lin.register_full_backward_pre_hook(lambda m, gout: log.append("pre"))
    h2 = lin.register_full_backward_hook(lambda m, gin, gout: log.append("full"))
    x = T.ones(1, 2, requires_grad=True)
    lin(x).sum().backward()
    h1.remove()
    h2.remove()
    out = lin(x)
    assert out.grad_fn.name() == "AddmmBackward0"
    out.sum().backward()
    assert log == ["pre", "full"]


def test_hooked_module_passes_keyword_arguments_to_forward(T):
    class Affine(T.nn.Module):
        def forward(self, x, *, shift=0.0):
            return x * 2 + shift

    seen = []
    m = Affine()
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(sorted(kwargs)),
                            with_kwargs=True)
    m.register_full_backward_hook(lambda *args: None)
    x = T.ones(2, requires_grad=True)
    assert to_np(m(x, shift=1.0)).tolist() == [3.0, 3.0] and seen == [["shift"]]


def test_forward_mode_derivatives_flow_through_a_model(T, rng):
    import importlib

    fwad = importlib.import_module(f"{T.__name__}.autograd.forward_ad")
    nn = T.nn
    m = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.LayerNorm(4), nn.SiLU(),
                      nn.Linear(4, 2)).double()
    set_weights(T, m, rng)
    a, t = sample(rng, (5, 3)), sample(rng, (5, 3))
    with fwad.dual_level():
        tangent = to_np(fwad.unpack_dual(m(fwad.make_dual(T.tensor(a), T.tensor(t)))).tangent)
    h = 1e-6
    with T.no_grad():
        fd = (to_np(m(T.tensor(a + h * t))) - to_np(m(T.tensor(a - h * t)))) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------- repr
def test_reprs_match_torch(T):
    nn = T.nn
    assert repr(nn.Linear(2, 3)) == "Linear(in_features=2, out_features=3, bias=True)"
    assert repr(nn.Linear(2, 3, bias=False)) == "Linear(in_features=2, out_features=3, bias=False)"
    expected = {
        nn.ReLU(): "ReLU()", nn.ReLU(inplace=True): "ReLU(inplace=True)", nn.Sigmoid(): "Sigmoid()",
        nn.Tanh(): "Tanh()", nn.GELU(): "GELU(approximate='none')",
        nn.GELU("tanh"): "GELU(approximate='tanh')", nn.SiLU(): "SiLU()",
        nn.Softmax(dim=1): "Softmax(dim=1)", nn.Softmax(): "Softmax(dim=None)",
        nn.Dropout(0.2): "Dropout(p=0.2, inplace=False)", nn.Identity(): "Identity()",
        nn.LayerNorm(4): "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)",
        nn.LayerNorm((3, 4), elementwise_affine=False):
            "LayerNorm((3, 4), eps=1e-05, elementwise_affine=False, bias=False)",
        nn.Embedding(5, 3): "Embedding(5, 3)",
        nn.Embedding(5, 3, padding_idx=-1, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True):
            "Embedding(5, 3, padding_idx=4, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True)",
        nn.MSELoss(): "MSELoss()", nn.CrossEntropyLoss(): "CrossEntropyLoss()",
        nn.Sequential(): "Sequential()", nn.ModuleList(): "ModuleList()", nn.Module(): "Module()",
    }
    assert {repr(m): text for m, text in expected.items()} == \
        {text: text for text in expected.values()}


def test_nested_repr_indents_children(T):
    nn = T.nn
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.Tanh()),
                      nn.ModuleList([nn.Identity(), nn.GELU()]))
    assert repr(m) == """Sequential(
  (0): Linear(in_features=2, out_features=3, bias=True)
  (1): ReLU()
  (2): Sequential(
    (0): Linear(in_features=3, out_features=3, bias=True)
    (1): Tanh()
  )
  (3): ModuleList(
    (0): Identity()
    (1): GELU(approximate='none')
  )
)"""


def test_module_list_repr_groups_repeated_entries(T):
    nn = T.nn
    m = nn.ModuleList([nn.Linear(3, 3) for _ in range(4)] + [nn.ReLU(), nn.Sequential(nn.Tanh())])
    assert repr(m) == """ModuleList(
  (0-3): 4 x Linear(in_features=3, out_features=3, bias=True)
  (4): ReLU()
  (5): Sequential(
    (0): Tanh()
  )
)"""


def test_custom_module_repr_names_its_class_and_attributes(T):
    b = Block.make(T)
    assert repr(b) == "Block(\n  (lin): Linear(in_features=2, out_features=2, bias=True)\n)"


# ---------------------------------------------------------------------------------- containers
def test_sequential_indexing_slicing_and_growth(T, rng):
    nn = T.nn
    layers = [nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)]
    s = nn.Sequential(*layers)
    assert len(s) == 3 and list(s) == layers and s[-1] is layers[2]
    head = s[:2]
    assert type(head) is nn.Sequential and list(head) == layers[:2]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    s.append(nn.Sigmoid())
    assert len(s) == 4 and [n for n, _ in s.named_children()] == ["0", "1", "2", "3"]
    del s[1]
    assert [type(m).__name__ for m in s] == ["Linear", "Linear", "Sigmoid"]
    assert list(s._modules) == ["0", "1", "2"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in named.named_children()] == ["fc", "act"] and named.fc is named[0]


def test_sequential_forward_chains_the_layers(T, rng):
    nn = T.nn
    s = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    set_weights(T, s, rng)
    a = sample(rng, (5, 3))
    w1, b1, w2, b2 = (to_np(p) for p in s.parameters())
    expected = np.tanh(a @ w1.T + b1) @ w2.T + b2
    np.testing.assert_allclose(to_np(s(T.tensor(a))), expected, rtol=1e-13)


def test_module_list_indexing_and_growth(T):
    nn = T.nn
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.append(nn.Sigmoid())
    ml.extend([nn.Identity()])
    ml += [nn.GELU()]
    assert len(ml) == 5 and type(ml[-1]).__name__ == "GELU"
    assert type(ml[1:3]) is nn.ModuleList and len(ml[1:3]) == 2
    assert [type(m).__name__ for m in ml] == ["ReLU", "Tanh", "Sigmoid", "Identity", "GELU"]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        ml[5]
    owner = nn.Module()
    owner.layers = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert [n for n, _ in owner.named_parameters()][:2] == ["layers.0.weight", "layers.0.bias"]


# ---------------------------------------------------------------------------------- layers
def test_linear_default_init_is_within_torchs_bounds(T):
    lin = T.nn.Linear(16, 8)
    bound = 1 / math.sqrt(16)
    w, b = to_np(lin.weight), to_np(lin.bias)
    assert w.shape == (8, 16) and b.shape == (8,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > bound / 2 and len(np.unique(w)) == w.size
    assert lin.weight.dtype == T.float32
    assert T.nn.Linear(2, 2, dtype=T.float64).weight.dtype == T.float64
    assert T.nn.Linear(2, 2, bias=False).bias is None


def test_linear_values_and_gradients(T, rng):
    lin = T.nn.Linear(3, 2).double()
    set_weights(T, lin, rng)
    a = sample(rng, (4, 3))
    x = leaf(T, a)
    y = lin(x)
    w, b = to_np(lin.weight), to_np(lin.bias)
    np.testing.assert_allclose(to_np(y), a @ w.T + b, rtol=1e-14)
    y.sum().backward()
    np.testing.assert_allclose(to_np(lin.weight.grad), np.ones((2, 4)) @ a, rtol=1e-14)
    np.testing.assert_allclose(to_np(x.grad), np.ones((4, 2)) @ w, rtol=1e-14)
    np.testing.assert_allclose(to_np(lin.bias.grad), [4.0, 4.0])


def test_activation_modules(T, rng):
    nn = T.nn
    a = sample(rng, (2, 3))
    x = T.tensor(a)
    cases = [(nn.ReLU(), np.maximum(a, 0)), (nn.Sigmoid(), 1 / (1 + np.exp(-a))),
             (nn.Tanh(), np.tanh(a)), (nn.SiLU(), a / (1 + np.exp(-a))),
             (nn.Softmax(dim=1), np.exp(a) / np.exp(a).sum(1, keepdims=True)),
             (nn.Identity(), a)]
    for module, expected in cases:
        np.testing.assert_allclose(to_np(module(x)), expected, rtol=1e-14)
    gelu = to_np(nn.GELU()(x))
    np.testing.assert_allclose(gelu, 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2))),
                               rtol=1e-14)


def test_dropout_module_follows_train_and_eval(T, rng):
    d = T.nn.Dropout(0.5)
    x = T.tensor(sample(rng, (200,)))
    y = to_np(d(x))
    assert (y == 0).any() and np.allclose(y[y != 0], 2 * to_np(x)[y != 0])
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        T.nn.Dropout(1.5)


def test_layer_norm_module(T, rng):
    ln = T.nn.LayerNorm(4).double()
    assert to_np(ln.weight).tolist() == [1.0] * 4 and to_np(ln.bias).tolist() == [0.0] * 4
    set_weights(T, ln, rng)
    a = sample(rng, (3, 4))
    mean, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
    expected = (a - mean) / np.sqrt(var + 1e-5) * to_np(ln.weight) + to_np(ln.bias)
    y = ln(leaf(T, a))
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-12)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    plain = T.nn.LayerNorm((2, 2), elementwise_affine=False)
    assert plain.weight is None and list(plain.parameters()) == []


def test_embedding_module(T, rng):
    emb = T.nn.Embedding(5, 3, padding_idx=1)
    assert to_np(emb.weight[1]).tolist() == [0.0, 0.0, 0.0]
    assert emb.weight.dtype == T.float32 and emb.weight.requires_grad
    emb.double()
    set_weights(T, emb, rng)
    w = to_np(emb.weight)
    y = emb(T.tensor([[1, 2], [2, 4]]))
    np.testing.assert_allclose(to_np(y), w[[[1, 2], [2, 4]]])
    y.sum().backward()
    assert to_np(emb.weight.grad)[:, 0].tolist() == [0.0, 0.0, 2.0, 0.0, 1.0]
    frozen = T.nn.Embedding.from_pretrained(T.tensor(w))
    assert not frozen.weight.requires_grad and isinstance(frozen.weight, T.nn.Parameter)


def test_loss_modules(T, rng):
    a, t = sample(rng, (4, 3)), sample(rng, (4, 3))
    mse = T.nn.MSELoss()(T.tensor(a), T.tensor(t))
    np.testing.assert_allclose(to_np(mse), ((a - t) ** 2).mean(), rtol=1e-14)
    assert to_np(T.nn.MSELoss(reduction="sum")(T.tensor(a), T.tensor(t))) == \
        pytest.approx(((a - t) ** 2).sum(), rel=1e-14)
    targets = np.array([0, 2, 1, 2])
    weight = np.array([0.5, 2.0, 1.5])
    ce = T.nn.CrossEntropyLoss(weight=T.tensor(weight))
    assert [n for n, _ in ce.named_buffers()] == ["weight"]
    logp = a - np.log(np.exp(a).sum(1, keepdims=True))
    w = weight[targets]
    expected = -(logp[np.arange(4), targets] * w).sum() / w.sum()
    np.testing.assert_allclose(to_np(ce(T.tensor(a), T.tensor(targets))), expected, rtol=1e-14)


# ---------------------------------------------------------------------------------- init
def init_module(T):
    import importlib

    return importlib.import_module(f"{T.__name__}.nn.init")


def test_calculate_gain(T):
    init = init_module(T)
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5.0 / 3 and init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01**2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fills_write_in_place_without_a_graph(T):
    init = init_module(T)
    p = T.nn.Parameter(T.empty(3, 4))
    assert init.constant_(p, 0.5) is p
    assert to_np(p).tolist() == [[0.5] * 4] * 3 and p.is_leaf and p._version == 1
    assert to_np(init.ones_(p)).tolist() == [[1.0] * 4] * 3
    assert to_np(init.zeros_(p)).tolist() == [[0.0] * 4] * 3
    assert p.grad_fn is None and p.requires_grad


def test_random_initializers_bounds_and_spread(T):
    init = init_module(T)
    T.manual_seed(0)
    w = T.empty(200, 300, dtype=T.float64)
    v = to_np(init.uniform_(w, -2.0, 3.0))
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.02
    v = to_np(init.normal_(w, 1.0, 2.0))
    assert abs(v.mean() - 1) < 0.02 and abs(v.std() - 2) < 0.02
    xavier = math.sqrt(6 / 500)
    v = to_np(init.xavier_uniform_(w))
    assert np.abs(v).max() <= xavier and np.abs(v).max() > 0.99 * xavier
    v = to_np(init.xavier_normal_(w, gain=2.0))
    assert abs(v.std() - 2 * math.sqrt(2 / 500)) < 0.002
    v = to_np(init.kaiming_uniform_(w, a=math.sqrt(5)))
    bound = math.sqrt(6 / (1 + 5)) / math.sqrt(300)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    v = to_np(init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"))
    assert abs(v.std() - math.sqrt(2 / 200)) < 0.002


def test_initializer_errors(T):
    init = init_module(T)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with "
                                         "fewer than 2 dimensions"):
        init.xavier_uniform_(T.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_mid not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(T.empty(2, 2), mode="fan_mid")
    empty = T.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_normal_(empty) is empty
