"""Legacy and environment spellings old scripts use (``torch.Tensor(2, 3)``, ``FloatTensor``,
``Variable``, ``torch.cuda``, ``finfo``, ``assert_close``, ...), run on ext and on torch."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

LEGACY = [("BFloat16Tensor", "bfloat16"), ("HalfTensor", "float16"), ("FloatTensor", "float32"),
          ("DoubleTensor", "float64"), ("ByteTensor", "uint8"), ("CharTensor", "int8"),
          ("ShortTensor", "int16"), ("IntTensor", "int32"), ("LongTensor", "int64"),
          ("BoolTensor", "bool")]


# ---------------------------------------------------------------------------- constructors
def test_tensor_of_ints_is_an_uninitialized_tensor_of_that_shape(T):
    x = T.Tensor(2, 3)
    assert x.shape == (2, 3) and x.dtype == T.float32 and not x.requires_grad
    assert T.Tensor(T.Size([4, 1])).shape == (4, 1)
    assert T.Tensor().shape == (0,)


def test_tensor_of_data_copies_it_in_the_default_dtype(T):
    assert repr(T.Tensor([1, 2])) == "tensor([1., 2.])"
    assert T.Tensor([[1, 2], [3, 4]]).dtype == T.float32
    assert T.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, a Size is a shape
    assert T.Tensor(np.array([1, 2])).tolist() == [1.0, 2.0]
    old = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        assert T.Tensor(2).dtype == T.float64 and T.Tensor([1]).dtype == T.float64
    finally:
        T.set_default_dtype(old)


def test_tensor_of_a_tensor_shares_its_values_and_keeps_its_dtype(T):
    t = T.tensor([1, 2])
    alias = T.Tensor(t)
    assert alias.dtype == T.int64
    t.add_(1)
    assert alias.tolist() == [2, 3]


@pytest.mark.parametrize("name, dtype", LEGACY)
def test_legacy_types_build_tensors_of_their_dtype(T, name, dtype):
    kind = getattr(T, name)
    assert str(kind) == f"<class '{T.__name__}.{name}'>"
    assert kind(2, 3).shape == (2, 3) and kind(2, 3).dtype == getattr(T, dtype)
    made = kind([1, 0, 2])
    assert made.dtype == getattr(T, dtype)
    assert made.tolist() == T.tensor([1, 0, 2], dtype=getattr(T, dtype)).tolist()


@pytest.mark.parametrize("name, dtype", LEGACY)
def test_isinstance_of_a_legacy_type_checks_the_dtype(T, name, dtype):
    kind = getattr(T, name)
    assert isinstance(T.zeros(2, dtype=getattr(T, dtype)), kind)
    other = T.int64 if dtype != "int64" else T.float32
    assert not isinstance(T.zeros(2, dtype=other), kind)
    assert not isinstance([0, 0], kind)


def test_legacy_repr_and_float_conversion_of_integer_data(T):
    assert repr(T.FloatTensor([1, 2])) == "tensor([1., 2.])"
    assert repr(T.LongTensor([1.7, 2])) == "tensor([1, 2])"
    assert repr(T.BoolTensor([1, 0])) == "tensor([ True, False])"
    assert repr(T.FloatTensor(np.array([1.5]))) == "tensor([1.5000])"


def test_type_names_and_converts_with_legacy_types(T):
    x = T.ones(2)
    assert x.type() == f"{T.__name__}.FloatTensor"
    assert T.ones(2, dtype=T.int8).type() == f"{T.__name__}.CharTensor"
    assert x.type(T.DoubleTensor).dtype == T.float64
    assert x.type(f"{T.__name__}.LongTensor").dtype == T.int64
    assert x.type(T.int32).dtype == T.int32
    assert x.type(T.FloatTensor) is x and x.type(T.float32) is x
    assert T.ones(2, dtype=T.int64).type(T.FloatTensor).tolist() == [1.0, 1.0]


def test_legacy_constructor_errors(T):
    with pytest.raises(TypeError, match="data must be a sequence \\(got float\\)"):
        T.Tensor(2.5)
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        T.FloatTensor("a")
    with pytest.raises(TypeError, match="invalid combination of arguments - got \\(list, list"):
        T.Tensor([1], [2])
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        T.Tensor(2, dtype=T.float64)
    with pytest.raises(TypeError):
        T.FloatTensor(T.ones(2, dtype=T.float64))
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        T.Tensor(-1)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but "
                                           "device type: cuda was passed"):
        T.Tensor(2, device="cuda")


# ---------------------------------------------------------------------------- Variable
def test_variable_is_a_new_leaf_over_the_same_values(T):
    t = T.ones(2)
    v = T.autograd.Variable(t, requires_grad=True)
    assert v is not t and v.is_leaf and v.requires_grad and not t.requires_grad
    t.add_(1)
    assert v.detach().tolist() == [2.0, 2.0]
    plain = T.autograd.Variable(t)
    assert plain is not t and not plain.requires_grad
    assert isinstance(t, T.autograd.Variable) and not isinstance(1.0, T.autograd.Variable)
    assert T.autograd.Variable().shape == (0,)


def test_variable_errors(T):
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        T.autograd.Variable([1.0])
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        T.autograd.Variable(T.ones(2, dtype=T.int64), requires_grad=True)


# ---------------------------------------------------------------------------- layout, formats
def test_layouts_and_memory_formats_print_their_names(T):
    for name in ("strided", "contiguous_format", "preserve_format", "channels_last"):
        assert repr(getattr(T, name)) == f"{T.__name__}.{name}"
    assert T.ones(2).layout == T.strided and T.ones(2).t().layout is T.strided
    assert isinstance(T.strided, T.layout)
    assert isinstance(T.channels_last, T.memory_format)


def test_factories_take_a_layout_and_a_memory_format(T):
    assert T.zeros(2, layout=T.strided).tolist() == [0.0, 0.0]
    assert T.full((2,), 3.0, layout=T.strided).tolist() == [3.0, 3.0]
    x = T.ones(2)
    for fmt in (T.contiguous_format, T.preserve_format):
        assert T.zeros_like(x, memory_format=fmt).tolist() == [0.0, 0.0]
        assert T.full_like(x, 2.0, memory_format=fmt).tolist() == [2.0, 2.0]
    image = T.ones(1, 2, 3, 4)
    made = T.ones_like(image, memory_format=T.channels_last)
    assert made.stride() == (24, 1, 8, 2) and made.shape == image.shape
    assert made.sum().item() == 24.0


def test_methods_take_a_memory_format(T):
    x = T.arange(24.0).reshape(1, 2, 3, 4)
    last = x.contiguous(memory_format=T.channels_last)
    assert last.stride() == (24, 1, 8, 2) and T.equal(last, x)
    assert last.contiguous(memory_format=T.channels_last) is last
    assert last.clone().stride() == (24, 1, 8, 2)  # (preserve_format, the default)
    assert last.clone(memory_format=T.contiguous_format).stride() == (24, 12, 4, 1)
    assert last.contiguous().stride() == (24, 12, 4, 1)
    assert x.clone(memory_format=T.channels_last).stride() == (24, 1, 8, 2)
    assert x.to(memory_format=T.channels_last).stride() == (24, 1, 8, 2)
    assert x.to(T.float64, memory_format=T.channels_last).stride() == (24, 1, 8, 2)
    assert x.to(memory_format=T.contiguous_format) is x
    assert last.to(memory_format=T.contiguous_format).stride() == (24, 12, 4, 1)
    flat = T.ones(2, 3)
    assert flat.contiguous(memory_format=T.preserve_format).tolist() == flat.tolist()


def test_a_memory_format_copy_keeps_the_gradient(T):
    x = T.arange(24.0, dtype=T.float64).reshape(1, 2, 3, 4).requires_grad_()
    (x.contiguous(memory_format=T.channels_last) * 2).sum().backward()
    assert x.grad.tolist() == T.full((1, 2, 3, 4), 2.0, dtype=T.float64).tolist()


def test_memory_format_errors(T):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        T.ones(2, 3).clone(memory_format=T.channels_last)
    with pytest.raises(TypeError, match="contiguous\\(\\): argument 'memory_format' must be "):
        T.ones(2).contiguous(memory_format=1)
    with pytest.raises(TypeError, match="to\\(\\)"):
        T.ones(2).to(memory_format=1)


def test_factory_option_errors(T):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        T.zeros_like(T.ones(2), memory_format=T.channels_last)
    with pytest.raises(TypeError, match="zeros_like\\(\\): argument 'memory_format' must be "):
        T.zeros_like(T.ones(2), memory_format=T.strided)
    with pytest.raises(TypeError, match="zeros\\(\\): argument 'layout' must be "):
        T.zeros(2, layout=1)


# ---------------------------------------------------------------------------- cuda, backends
def test_cuda_is_absent_as_on_a_cpu_only_build(T):
    assert T.cuda.is_available() is False
    assert T.cuda.device_count() == 0
    assert T.cuda.is_initialized() is False
    assert T.cuda.manual_seed_all(0) is None and T.cuda.manual_seed(0) is None
    with pytest.raises(ValueError):
        T.cuda.manual_seed_all("a")


def test_moving_to_cuda_fails_as_on_a_cpu_only_build(T):
    x = T.ones(2)
    message = f"{T.__name__[0].upper()}{T.__name__[1:]} not compiled with CUDA enabled"
    for attempt in (x.cuda, lambda: x.to("cuda"), lambda: x.to("cuda:0"),
                    lambda: T.zeros(2, device="cuda"), T.cuda.current_device,
                    T.cuda.synchronize):
        with pytest.raises(AssertionError) as info:
            attempt()
        assert str(info.value).lower() == message.lower()
    assert x.cpu() is x


def test_backend_flags_scripts_set(T):
    # (in a fresh process: torch's test utilities, which op_db's tests import, freeze torch's
    # flags for the rest of the process)
    code = f"""
import {T.__name__} as T
cudnn = T.backends.cudnn
assert cudnn.is_available() is False and T.backends.mps.is_available() is False
assert (cudnn.benchmark, cudnn.deterministic) == (False, False) and cudnn.enabled is True
cudnn.benchmark, cudnn.deterministic = True, True
assert (cudnn.benchmark, cudnn.deterministic) == (True, True)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.stdout.strip() == "ok", done.stderr


def test_threads_and_default_device(T):
    old = T.get_num_threads()
    assert isinstance(old, int) and old >= 1
    try:
        T.set_num_threads(1)
        assert T.get_num_threads() == 1
    finally:
        T.set_num_threads(old)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        T.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got str"):
        T.set_num_threads("a")
    T.set_default_device("cpu")
    T.set_default_device(None)
    assert T.get_default_device() == T.device("cpu")
    assert T.ones(1).device == T.device("cpu")


# ---------------------------------------------------------------------------- small names
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_finfo_matches_the_dtype(T, dtype):
    info, ref = T.finfo(getattr(T, dtype)), np.finfo(dtype)
    assert (info.bits, info.eps, info.max, info.min) == (ref.bits, ref.eps, ref.max, ref.min)
    assert info.tiny == info.smallest_normal == ref.smallest_normal
    assert info.resolution == 10.0 ** -ref.precision
    assert info.dtype == dtype
    assert repr(info) == (f"finfo(resolution={info.resolution:g}, min={info.min:g}, "
                          f"max={info.max:g}, eps={info.eps:g}, "
                          f"smallest_normal={info.smallest_normal:g}, tiny={info.tiny:g}, "
                          f"dtype={dtype})")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_the_dtype(T, dtype):
    info, ref = T.iinfo(getattr(T, dtype)), np.iinfo(dtype)
    assert (info.bits, info.max, info.min, info.dtype) == (ref.bits, ref.max, ref.min, dtype)
    assert repr(info) == f"iinfo(min={info.min:g}, max={info.max:g}, dtype={dtype})"


def test_finfo_iinfo_defaults_and_errors(T):
    assert T.finfo().dtype == "float32"
    name = T.__name__
    with pytest.raises(TypeError, match=f"{name}.finfo\\(\\) requires a floating point input"):
        T.finfo(T.int64)
    with pytest.raises(TypeError, match=f"{name}.iinfo\\(\\) requires an integer input type"):
        T.iinfo(T.float32)
    with pytest.raises(TypeError, match=f"{name}.bool is not supported by {name}.iinfo"):
        T.iinfo(T.bool)


def test_constants(T):
    assert T.inf == math.inf and math.isnan(T.nan)
    assert T.pi == math.pi and T.e == math.e


def test_numel_and_is_floating_point(T):
    x = T.ones(2, 3)
    assert T.numel(x) == 6 and T.is_floating_point(x)
    assert not T.is_floating_point(T.ones(2, dtype=T.int64))
    with pytest.raises(TypeError, match="numel\\(\\): argument 'input' \\(position 1\\) must be "
                                        "Tensor, not list"):
        T.numel([1])
    with pytest.raises(TypeError, match="is_floating_point\\(\\): argument 'input' \\(position "
                                        "1\\) must be Tensor, not float"):
        T.is_floating_point(1.0)


# ---------------------------------------------------------------------------- assert_close
def test_assert_close_passes_within_the_dtype_tolerance(T):
    close = T.testing.assert_close
    close(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0 + 1e-6]))
    close(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.1]), rtol=0.1, atol=0.0)
    close(T.tensor([math.nan]), T.tensor([math.nan]), equal_nan=True)
    close([T.ones(1), 2], (T.ones(1), 2))
    close({"a": T.ones(1)}, {"a": T.ones(1)})
    close(T.ones(1), T.ones(1, dtype=T.float64), check_dtype=False)
    close(1.0, 1.0 + 1e-9)


def test_assert_close_reports_the_worst_element(T):
    with pytest.raises(AssertionError) as info:
        T.testing.assert_close(T.tensor([1.0, 2.0]), T.tensor([1.0, 2.1]))
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
        "Greatest absolute difference: 0.09999990463256836 at index (1,) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.04761900380253792 at index (1,) (up to 1.3e-06 "
        "allowed)")
    with pytest.raises(AssertionError) as info:
        T.testing.assert_close(T.tensor([1, 2]), T.tensor([1, 3]))
    assert str(info.value) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
        "Greatest absolute difference: 1 at index (1,)\n"
        "Greatest relative difference: 0.3333333432674408 at index (1,)")
    with pytest.raises(AssertionError, match="Greatest absolute difference: nan at index "):
        T.testing.assert_close(T.tensor([math.nan]), T.tensor([math.nan]))


def test_assert_close_checks_shape_dtype_and_scalars(T):
    close = T.testing.assert_close
    with pytest.raises(AssertionError) as info:
        close(T.ones(2), T.ones(3))
    assert str(info.value) == ("The values for attribute 'shape' do not match: "
                               f"{T.Size([2])!r} != {T.Size([3])!r}.")
    with pytest.raises(AssertionError) as info:
        close(T.ones(2), T.ones(2, dtype=T.float64))
    assert str(info.value) == ("The values for attribute 'dtype' do not match: "
                               f"{T.float32!r} != {T.float64!r}.")
    with pytest.raises(AssertionError) as info:
        close(1.0, 1.1)
    assert str(info.value) == (
        "Scalars are not close!\n\nExpected 1.1 but got 1.0.\n"
        "Absolute difference: 0.10000000000000009 (up to 1e-07 allowed)\n"
        "Relative difference: 0.09090909090909098 (up to 1e-07 allowed)")
    with pytest.raises(AssertionError, match="^custom$"):
        close(T.ones(1), T.zeros(1), msg="custom")
    with pytest.raises(ValueError, match="must be either specified or omitted, but got no atol"):
        close(T.ones(1), T.ones(1), rtol=0.1)
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type"):
        close(T.ones(1), [1.0])


# ---------------------------------------------------------------------------- import
@pytest.mark.ext_only
def test_import_ext_reaches_utils_and_testing_without_torch():
    code = ("import sys, ext\n"
            "assert callable(ext.utils.checkpoint.checkpoint)\n"
            "assert 'torch' not in sys.modules\n"
            "assert ext.cuda.is_available() is False and ext.backends.cudnn.enabled\n"
            "assert 'torch' not in sys.modules\n"
            "assert callable(ext.testing.assert_close)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


# ---------------------------------------------------------------------------- type strings
@pytest.mark.parametrize("name, dtype", LEGACY)
def test_type_string_of_every_dtype_is_torchs(T, name, dtype):
    assert T.ones(2, dtype=getattr(T, dtype)).type() == f"{T.__name__}.{name}"
    assert T.zeros(2).type(f"torch.{name}").dtype == getattr(T, dtype)


def test_type_takes_torch_arguments(T):
    x = T.ones(2)
    assert x.type(T.float64, True).dtype == T.float64
    assert x.type(dtype=T.int32).dtype == T.int32
    assert x.type(None) == f"{T.__name__}.FloatTensor"
    assert x.type(T.Tensor).dtype == T.float32 and x.type("torch.Tensor").dtype == T.float32


def test_type_errors_are_torchs(T):
    x = T.ones(2)
    with pytest.raises(TypeError, match="^dtype must be a type, str, or dtype object$"):
        x.type(5)
    with pytest.raises(ValueError, match="^invalid type: 'float'$"):
        x.type(float)
    with pytest.raises(ValueError, match="^invalid type: 'torch.float64'$"):
        x.type("torch.float64")
    with pytest.raises(ValueError, match="^invalid type: 'FloatTensor'$"):
        x.type("FloatTensor")
    with pytest.raises(RuntimeError, match="^Cannot initialize CUDA without ATen_cuda library"):
        x.type("torch.cuda.FloatTensor")
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.type(T.float64, foo=1)


# ---------------------------------------------------------------------------- .data
def test_data_is_an_untracked_alias(T):
    x = T.ones(3, requires_grad=True)
    d = (x * 2).data
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    x.data.mul_(3)
    assert x.tolist() == [3.0, 3.0, 3.0] and x.requires_grad
    y = x.exp()
    x.data.add_(1)  # (no version bump: backward runs; exp's gradient is its saved result)
    y.sum().backward()
    assert np.allclose(x.grad.tolist(), np.exp([3.0, 3.0, 3.0]))
    assert x.tolist() == [4.0, 4.0, 4.0]


def test_setting_data_replaces_values_shape_and_dtype(T):
    x = T.ones(3, requires_grad=True)
    x.data = T.zeros(2, dtype=T.float64)
    assert repr(x) == f"tensor([0., 0.], dtype={T.__name__}.float64, requires_grad=True)"
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got list$"):
        x.data = [1, 2]


# ---------------------------------------------------------------------------- device
def test_device_spellings_print_as_torchs(T):
    assert repr(T.device("cpu")) == "device(type='cpu')" and str(T.device("cpu")) == "cpu"
    for spelling in (("cpu", 0), ("cpu:0",), ()):
        d = T.device(*spelling) if spelling else T.device(type="cpu", index=0)
        assert repr(d) == "device(type='cpu', index=0)" and str(d) == "cpu:0"
        assert (d.type, d.index) == ("cpu", 0)
    assert T.device("cpu").index is None and T.device("cpu", 1).index == 1
    assert repr(T.device("cuda:1")) == "device(type='cuda', index=1)"
    assert repr(T.device(T.device("cpu", 0))) == "device(type='cpu', index=0)"
    assert repr(T.device(b"cpu")) == "device(type='cpu')"


def test_device_equality_and_hash_count_the_index(T):
    assert T.device("cpu") == T.device("cpu") and T.device("cpu:0") == T.device("cpu", 0)
    assert T.device("cpu") != T.device("cpu", 0)
    assert T.device("cpu") != "cpu"  # (a string is not a device)
    assert len({T.device("cpu"), T.device("cpu"), T.device("cpu", 0)}) == 2
    import pickle

    assert pickle.loads(pickle.dumps(T.device("cpu", 0))) == T.device("cpu", 0)


def test_tensors_report_the_plain_cpu_device(T):
    assert T.zeros(2, device="cpu:0").device == T.device("cpu")
    assert T.zeros(2, device=T.device("cpu", 0)).device.index is None
    assert T.ones(2).to("cpu:0").device == T.device("cpu")
    with T.device("cpu"):
        assert T.zeros(1).device == T.device("cpu")


@pytest.mark.ext_only
def test_tensors_and_modules_refuse_a_device_ext_lacks():
    import ext

    for where in (ext.device("meta"), "meta"):
        with pytest.raises(RuntimeError, match="ext tensors live on the CPU only"):
            ext.ones(2).to(where)
        with pytest.raises(RuntimeError, match="ext tensors live on the CPU only"):
            ext.nn.Linear(2, 2).to(where)
    with pytest.raises(AssertionError, match="ext not compiled with CUDA enabled"):
        ext.ones(2).to(ext.device("cuda", 0))


def test_device_errors_are_torchs(T):
    with pytest.raises(RuntimeError, match="^Expected one of cpu, cuda, .* device type at start "
                                           "of device string: foo$"):
        T.device("foo")
    for bad in ("cpu:x", "cpu:-1", "cpu:01", "cpu: 0"):
        with pytest.raises(RuntimeError, match=f"^Invalid device string: '{bad}'$"):
            T.device(bad)
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        T.device("cpu", -1)
    with pytest.raises(RuntimeError, match="must not include an index because index was passed "
                                           "explicitly: cpu:0"):
        T.device("cpu:0", 0)
    with pytest.raises(TypeError, match="argument 'index' \\(position 2\\) must be int, not str"):
        T.device("cpu", "0")
    with pytest.raises(TypeError, match="argument 'index' \\(position 2\\) must be int, not bool"):
        T.device("cpu", True)
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is "
                                           "available.$"):
        T.device(0)
    with pytest.raises(TypeError, match="^device\\(\\) received an invalid combination of "
                                        "arguments - got \\(NoneType\\)"):
        T.device(None)
    with pytest.raises(AttributeError):
        T.device("cpu").type = "cuda"


# ---------------------------------------------------------------------------- Generator
def test_generator_device_and_repr(T):
    g = T.Generator()
    assert g.device == T.device("cpu") and repr(g.device) == "device(type='cpu')"
    assert T.Generator("cpu:0").device == T.device("cpu")
    assert T.Generator(device=T.device("cpu")).device == T.device("cpu")
    module = "torch._C" if T is torch else T.__name__
    assert repr(g) == f"<{module}.Generator object at {hex(id(g))}>"
    assert isinstance(T.default_generator, T.Generator)
    assert T.manual_seed(0) is T.default_generator


def test_generator_seeds_and_states(T):
    g = T.Generator()
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    fresh = g.seed()
    assert isinstance(fresh, int) and fresh == g.initial_seed()
    state = g.manual_seed(5).get_state()
    assert state.dtype == T.uint8 and tuple(state.shape) == (5056,)
    first = T.rand(3, generator=g)
    assert g.set_state(state) is g
    assert T.equal(T.rand(3, generator=g), first)


def test_generator_states_cross_engines():
    import ext

    state = torch.Generator().manual_seed(11).get_state()
    mine = ext.Generator().set_state(ext.tensor(state.numpy()))
    assert ext.rand(4, generator=mine).tolist() == \
        torch.rand(4, generator=torch.Generator().set_state(state)).tolist()
    assert np.array_equal(ext.Generator().manual_seed(11).get_state().numpy(), state.numpy())


def test_generator_errors_are_torchs(T):
    g = T.Generator()
    for bad in (1.5, True, "1"):
        with pytest.raises(RuntimeError, match=f"^manual_seed expected a long, but got "
                                               f"{type(bad).__name__}$"):
            g.manual_seed(bad)
    assert T.manual_seed(3.7).initial_seed() == 3  # (the module's function takes int(seed))
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        g.set_state(T.zeros(3))
    with pytest.raises(TypeError, match="^expected a torch.ByteTensor, but got list$"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="^Expected a CPUGeneratorImplState of size 5056 but "
                                           "found the input RNG state size to be 3$"):
        g.set_state(T.zeros(3, dtype=T.uint8))
    with pytest.raises(RuntimeError, match="^Cannot get CUDA generator without ATen_cuda "
                                           "library."):
        T.Generator("cuda")
    with pytest.raises(RuntimeError, match="^META device type not an accelerator.$"):
        T.Generator("meta")
