"""ext's random stream is torch's CPU stream: the same seed gives the same numbers.

Every case runs the same calls on ext and on torch (the oracle) and compares the results bit for
bit: uniforms, integers, permutations, normals and the generator's state. Normals of 16 or more
float32 elements come from torch's SIMD log/sin/cos on x86 (AVX2 and AVX-512 builds), which ext
reproduces step by step; where torch runs another kernel (no AVX2), those may differ in the last
bits, and ``_normals_match`` then allows 8 units in the last place at the samples' scale.
"""

from __future__ import annotations

import numpy as np
import pytest

import ext

torch = pytest.importorskip("torch")

SEEDS = [0, 1, 42, 2**32 + 5]
# Sizes on both sides of torch's switch at 16 elements (scalar pairs below, blocks of 16 above).
SIZES = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 100]


def _np(t) -> np.ndarray:
    return t.detach().numpy()


def _same(a, b) -> None:
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _close(a, b, ulps: int) -> None:
    """Equal to within ``ulps`` units in the last place at scale 1 or the larger magnitude
    (values near zero come from sin or cos near a root, so their error is at scale 1)."""
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0).astype(a.dtype)
    np.testing.assert_array_less(np.abs(a.astype(np.float64) - b), ulps * np.spacing(scale))


_X86_SIMD = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


def _normals_match(a, b) -> None:
    if _X86_SIMD or b.dtype != torch.float32:
        _same(a, b)
    else:
        _close(a, b, ulps=8)


def _same_state() -> None:
    _same(ext.get_rng_state(), torch.get_rng_state())


def _seed(seed: int) -> None:
    ext.manual_seed(seed)
    torch.manual_seed(seed)


# --- the engine ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS + [-1, 2**64 - 1, 7.9])
def test_manual_seed_gives_torch_state_and_initial_seed(seed):
    _seed(seed)
    assert ext.initial_seed() == torch.initial_seed()
    _same_state()


def test_unseeded_generator_starts_where_torch_does():
    assert ext.Generator().initial_seed() == torch.Generator().initial_seed()
    _same(ext.Generator().get_state(), torch.Generator().get_state())


@pytest.mark.parametrize("seed", [2**64, -2**63 - 1])
def test_manual_seed_out_of_range_is_value_error(seed):
    with pytest.raises(ValueError) as theirs:
        torch.manual_seed(seed)
    with pytest.raises(ValueError) as ours:
        ext.manual_seed(seed)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("seed", SEEDS)
def test_state_after_mixed_calls_matches_torch(seed):
    # 624 words per twist: 700 float64 uniforms cross a twist boundary twice.
    _seed(seed)
    for n in (5, 700, 1, 623):
        _same(ext.rand(n, dtype=ext.float64), torch.rand(n, dtype=torch.float64))
        _same_state()
        _same(ext.rand(n), torch.rand(n))
        _same_state()


# --- uniform ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_rand_float32_and_float64_sequences(seed):
    _seed(seed)
    for n in SIZES:
        _same(ext.rand(n), torch.rand(n))
        _same(ext.rand(n, 2, dtype=ext.float64), torch.rand(n, 2, dtype=torch.float64))
        _same(ext.rand(n, dtype=ext.float16), torch.rand(n, dtype=torch.float16))
    _same_state()


def test_rand_like_uses_the_stream():
    _seed(3)
    _same(ext.rand_like(ext.zeros(4, 5)), torch.rand_like(torch.zeros(4, 5)))
    _same(ext.rand_like(ext.zeros(6), dtype=ext.float64),
          torch.rand_like(torch.zeros(6), dtype=torch.float64))


# --- normal -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_randn_sequence_across_the_16_element_switch(seed, dtype):
    _seed(seed)
    for n in SIZES:
        _normals_match(ext.randn(n, dtype=getattr(ext, dtype)),
                       torch.randn(n, dtype=getattr(torch, dtype)))
        _same_state()  # the words drawn and the cached second sample


def test_randn_small_calls_share_the_cached_sample_exactly():
    # Below 16 elements torch makes pairs in double and keeps the second for the next call.
    _seed(11)
    for n in (1, 3, 2, 5, 1, 1, 4):
        _same(ext.randn(n, dtype=ext.float64), torch.randn(n, dtype=torch.float64))
        _same(ext.randn(n), torch.randn(n))
        _same_state()


def test_randn_like_and_shapes():
    _seed(5)
    _normals_match(ext.randn(4, 5), torch.randn(4, 5))
    _normals_match(ext.randn_like(ext.zeros(3, 7)), torch.randn_like(torch.zeros(3, 7)))
    _same_state()


# --- integers and permutations ------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_randint_sequences_small_and_large_ranges(seed):
    # Ranges of 2**28 or more take 64-bit words.
    _seed(seed)
    for low, high, n in [(0, 10, 5), (-3, 4, 17), (0, 2**28 - 1, 9), (0, 2**28, 9),
                         (-2**40, 2**40, 33), (5, 6, 3), (-2**63, 2**63 - 1, 4)]:
        _same(ext.randint(low, high, (n,)), torch.randint(low, high, (n,)))
    _same(ext.randint(7, (2, 3)), torch.randint(7, (2, 3)))
    _same(ext.randint(0, 100, (8,), dtype=ext.int32),
          torch.randint(0, 100, (8,), dtype=torch.int32))
    _same(ext.randint(0, 100, (8,), dtype=ext.float32),
          torch.randint(0, 100, (8,), dtype=torch.float32))
    _same_state()


@pytest.mark.parametrize("seed", SEEDS)
def test_randperm_sequences(seed):
    _seed(seed)
    for n in (0, 1, 2, 5, 16, 17, 100, 1000):
        _same(ext.randperm(n), torch.randperm(n))
    _same(ext.randperm(9, dtype=ext.float64), torch.randperm(9, dtype=torch.float64))
    _same(ext.randperm(50, dtype=ext.int32), torch.randperm(50, dtype=torch.int32))
    _same_state()


@pytest.mark.parametrize("args, kwargs", [((-1,), {}), ((2**24 + 2,), {"dtype": "float32"}),
                                          ((300,), {"dtype": "uint8"}), ((2.0,), {}),
                                          ((5,), {"dtype": "bool"})])
def test_randperm_errors_match_torch(args, kwargs):
    def call(mod):
        extra = {k: getattr(mod, v) for k, v in kwargs.items()}
        return mod.randperm(*args, **extra)
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(ext)
    assert str(ours.value) == str(theirs.value)


# --- mixed sequences, generators, state save and restore ----------------------------------------


def _mixed(mod, generator=None):
    g = {"generator": generator}
    return [mod.rand(3, **g), mod.randn(5, **g), mod.randint(0, 9, (20,), **g),
            mod.randn(18, dtype=mod.float64, **g), mod.randperm(12, **g),
            mod.rand(17, dtype=mod.float64, **g), mod.randn(1, **g), mod.randn(40, **g)]


def _compare_mixed(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        _normals_match(a, b)


@pytest.mark.parametrize("seed", SEEDS)
def test_mixed_call_sequence_after_manual_seed(seed):
    _seed(seed)
    _compare_mixed(_mixed(ext), _mixed(torch))
    _same_state()


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_objects_are_independent_streams(seed):
    _seed(99)
    g, tg = ext.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    assert g.initial_seed() == tg.initial_seed()
    _compare_mixed(_mixed(ext, g), _mixed(torch, tg))
    _same(g.get_state(), tg.get_state())
    _same_state()  # the default generator was not touched
    _same(ext.rand(4), torch.rand(4))


def test_get_and_set_rng_state_replay_and_cross_load():
    _seed(21)
    ext.randn(3)  # leaves a cached normal sample in the state
    torch.randn(3)
    saved, tsaved = ext.get_rng_state(), torch.get_rng_state()
    _same(saved, tsaved)
    first = _mixed(ext)
    ext.manual_seed(0)
    ext.set_rng_state(saved)
    for a, b in zip(first, _mixed(ext)):
        _same(a, b)
    # a state saved by torch loads into ext (and the other way), initial_seed included
    torch.manual_seed(8)
    ext.set_rng_state(ext.tensor(tsaved.numpy()))
    torch.set_rng_state(tsaved)
    assert ext.initial_seed() == torch.initial_seed() == 21
    _compare_mixed(_mixed(ext), _mixed(torch))
    g = torch.Generator().set_state(torch.from_numpy(ext.get_rng_state().numpy().copy()))
    _same(ext.rand(6, dtype=ext.float64), torch.rand(6, dtype=torch.float64, generator=g))


def test_set_rng_state_rejects_torch_bad_states():
    with pytest.raises(TypeError, match="ByteTensor"):
        ext.set_rng_state(ext.zeros(5056))
    with pytest.raises(RuntimeError, match="size 5056"):
        ext.set_rng_state(ext.zeros(10, dtype=ext.uint8))


# --- users of the stream: nn.init, layers, dropout ----------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_nn_init_functions_after_manual_seed(seed):
    _seed(seed)
    for name, args in [("uniform_", (-0.37, 0.37)), ("normal_", (0.3, 1.7)), ("uniform_", ()),
                       ("xavier_uniform_", ()), ("xavier_normal_", ()),
                       ("kaiming_uniform_", ()), ("kaiming_normal_", ())]:
        for shape in ((5, 3), (20, 30), (4, 4)):
            ours = getattr(ext.nn.init, name)(ext.empty(*shape), *args)
            theirs = getattr(torch.nn.init, name)(torch.empty(*shape), *args)
            _normals_match(ours, theirs)
    _same_state()


def test_uniform_bounds_in_float64_round_once():
    # torch fuses ``u * (high - low) + low`` into one rounding
    _seed(4)
    _same(ext.nn.init.uniform_(ext.empty(500, dtype=ext.float64), -2.5, 3.1),
          torch.nn.init.uniform_(torch.empty(500, dtype=torch.float64), -2.5, 3.1))


def test_linear_layers_start_with_torch_weights():
    _seed(3)
    ours, theirs = ext.nn.Linear(20, 30), torch.nn.Linear(20, 30)
    _same(ours.weight, theirs.weight)
    _same(ours.bias, theirs.bias)


@pytest.mark.parametrize("p", [0.1, 0.33, 0.5, 0.9])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_masks_match_torch(p, dtype):
    _seed(1)
    x = np.random.default_rng(0).standard_normal((40, 7)).astype(dtype)
    for _ in range(2):
        _same(ext.nn.functional.dropout(ext.tensor(x), p),
              torch.nn.functional.dropout(torch.tensor(x), p))
    _same_state()


# --- the samplers themselves (for the in-place methods built on them) ----------------------------


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool",
                                   "float16", "float32", "float64"])
def test_random_full_range_sampler_is_torch_random_(dtype):
    from ext import _random

    engine = _random.CPUEngine(42)
    torch.manual_seed(42)
    for n in (3, 50):
        _same(ext.from_numpy(_random.random_full(engine, n, dtype)),
              torch.empty(n, dtype=getattr(torch, dtype)).random_())
    _same(ext.from_numpy(engine.get_state()), torch.get_rng_state())


@pytest.mark.parametrize("p", [0.0, 0.25, 0.7, 1.0])
def test_bernoulli_sampler_is_torch_bernoulli_(p):
    from ext import _random

    engine = _random.CPUEngine(5)
    torch.manual_seed(5)
    ours = _random.bernoulli(engine, 300, p).astype(np.float32)
    _same(ext.from_numpy(ours), torch.empty(300).bernoulli_(p))
