"""ext.viz.make_dot: torchviz's look on ext and torch graphs, without its crashes.

Pictures are checked through ``dot.source`` with node ids renamed in order of appearance;
rendering runs only where Graphviz's ``dot`` is installed (.ci/run installs it).
"""

from __future__ import annotations

import re
import shutil
import sys

import numpy as np
import pytest
import torch
from helpers import leaf, sample

import ext
from ext.viz import GraphvizNotFound, make_dot

# torchviz 0.0.3 compares versions with distutils' LooseVersion, which warns.
torchviz_warns = pytest.mark.filterwarnings("ignore::DeprecationWarning")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot not installed")


def normalized(source: str) -> str:
    """DOT text with each node id (an id() number, alone or with a saved-slot suffix) replaced by
    n0, n1, ... in order of first appearance."""
    ids: dict[str, str] = {}
    return re.sub(r'"?\b\d{6,}(?:_\w+)?\b"?', lambda m: ids.setdefault(m.group(0),
                                                                        f"n{len(ids)}"), source)


def small_graph(T, rng):
    x = leaf(T, sample(rng, (2, 3)))
    w = leaf(T, sample(rng, (3,)))
    return x, w, (x * w).exp().sum()


class Double(ext.autograd.Function):
    """A custom Function that saves its input (runs on both engines through the bridge)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2


# -------------------- torchviz's look


@torchviz_warns
def test_make_dot_source_is_torchviz_source_on_a_torch_graph(rng):
    torchviz = pytest.importorskip("torchviz")
    x, w, y = small_graph(torch, rng)
    for options in ({}, {"show_attrs": True}, {"max_attr_chars": 5, "show_attrs": True}):
        ours = make_dot(y, params={"x": x}, **options).source
        theirs = torchviz.make_dot(y, params={"x": x}, **options).source
        assert normalized(ours) == normalized(theirs)


@torchviz_warns
def test_make_dot_draws_an_ext_graph_as_torchviz_draws_the_torch_one(rng):
    torchviz = pytest.importorskip("torchviz")
    x_np, w_np = sample(rng, (2, 3)), sample(rng, (3,))
    sources = []
    for T in (ext, torch):
        x, w = leaf(T, x_np), leaf(T, w_np)
        v = (x * w).tanh()[0]
        outputs = (v[1:], v)  # a view output, then its base
        draw = make_dot if T is ext else torchviz.make_dot
        sources.append(normalized(draw(outputs, params={"x": x, "w": w}).source))
    assert sources[0] == sources[1]


def test_make_dot_colours_outputs_leaves_view_bases_and_saved_tensors(T, rng):
    x, w, _ = small_graph(T, rng)
    base = x * w
    view = base[0]
    src = make_dot(view, params={"x": x}, show_saved=True).source
    assert 'label="x\n (2, 3)" fillcolor=lightblue' in src
    assert 'label="\n (3)" fillcolor=darkolivegreen1' in src  # the output
    assert 'label="\n (2, 3)" fillcolor=darkolivegreen3' in src  # its base
    assert "[style=dotted]" in src
    assert 'label="self\n (2, 3)" fillcolor=orange' in src
    assert "[label=MulBackward0]" in src and "[label=SelectBackward0]" in src
    assert 'node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 ' \
           'shape=box style=filled]' in src


def test_a_saved_input_keeps_its_leaf_colour(T):
    # torchviz gives the saved tensor the input's id, so the leaf turns orange (its issue #69).
    x = T.ones(3, requires_grad=True)
    src = make_dot((x * x).sum(), params={"x": x}, show_saved=True).source
    leaf_id = str(id(x))
    assert re.search(rf'\b{leaf_id} \[label="x\n \(3\)" fillcolor=lightblue\]', src)
    assert not re.search(rf'\b{leaf_id} \[[^]]*orange', src)
    assert src.count("fillcolor=orange") == 2  # self and other, one node each


def test_show_attrs_lists_non_tensor_fields_cut_to_max_attr_chars(T):
    x = T.ones(2, 3, requires_grad=True)
    src = make_dot(x.sum(0).exp(), show_attrs=True, max_attr_chars=8).source
    assert "result: [save..." in src  # '[saved tensor]' cut to 8 characters
    assert "result: [saved tensor]" in make_dot(x.sum(0).exp(), show_attrs=True).source


# -------------------- after backward, custom Functions


def test_custom_function_graph_after_backward_draws_freed_saved_tensors(T):
    x = T.ones(3, requires_grad=True)
    y = Double.apply(x).exp().sum()
    before = make_dot(y, params={"x": x}).source
    assert "[label=DoubleBackward]" in before
    assert 'label="x\n (3)" fillcolor=orange' in before  # always drawn
    y.backward()
    after = make_dot(y, params={"x": x}, show_attrs=True, show_saved=True).source
    assert 'label="saved tensors\n (freed)" fillcolor=orange' in after
    assert 'label="result\n (freed)" fillcolor=orange' in after  # ExpBackward0's
    assert "result: [freed]" in after


@needs_dot
def test_custom_function_graph_after_backward_renders_to_svg_and_png(T, tmp_path):
    x = T.ones(3, requires_grad=True)
    y = Double.apply(x).sum()
    y.backward()
    dot = make_dot(y, params={"x": x}, show_saved=True)
    svg = dot.render(tmp_path / "graph", format="svg")
    assert "DoubleBackward" in open(svg).read()
    assert dot.pipe(format="png")[:4] == b"\x89PNG"


# -------------------- large graphs


def chain(T, n):
    x = T.ones(1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0
    return y


def test_make_dot_walks_a_chain_deeper_than_the_recursion_limit(T):
    n = sys.getrecursionlimit() * 3
    dot = make_dot(chain(T, n))
    assert dot.source.count("[label=MulBackward0]") == n
    assert dot.source.count("->") == n + 2  # the chain, the leaf edge, the output edge


@pytest.mark.slow
@pytest.mark.ext_only
def test_make_dot_builds_a_100000_node_chain():
    # ext only: torch 2.13 itself segfaults when it frees a chain of more than ~50,000 nodes
    # whose Python node objects were created (walking next_functions and dropping the output
    # is enough, without make_dot).
    dot = make_dot(chain(ext, 100_000))
    assert dot.source.count("[label=MulBackward0]") == 100_000


def test_max_nodes_cuts_the_graph_with_a_note(T):
    dot = make_dot(chain(T, 50), max_nodes=5)
    assert dot.source.count("[label=MulBackward0]") == 5
    assert "graph cut at max_nodes=5" in dot.source
    assert "max_nodes_note ->" in dot.source and "[style=dashed]" in dot.source
    whole = make_dot(chain(T, 50))
    assert "max_nodes" not in whole.source


# -------------------- bad input and a missing Graphviz


def test_make_dot_refuses_a_non_tensor_naming_the_argument(T):
    with pytest.raises(TypeError, match="argument 'var' must be a tensor or a tuple of tensors"):
        make_dot([T.ones(1)])
    with pytest.raises(TypeError, match="argument 'var'"):
        make_dot((T.ones(1), 2.0))
    with pytest.raises(TypeError, match="argument 'params'"):
        make_dot(T.ones(1), params={"x": 1.0})
    with pytest.raises(ValueError, match="max_nodes"):
        make_dot(T.ones(1), max_nodes=0)


def test_rendering_without_graphviz_names_the_fix(T, monkeypatch, tmp_path):
    dot = make_dot((T.ones(2, requires_grad=True) * 2).sum())
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(GraphvizNotFound, match="apt-get install graphviz"):
        dot.render(tmp_path / "g", format="svg")
    with pytest.raises(RuntimeError, match="`dot` executable"):
        dot.pipe(format="png")
    assert "MulBackward0" in dot.source  # the DOT text needs no Graphviz


def test_make_dot_accepts_a_tensor_without_history(T):
    src = make_dot(T.tensor(np.zeros((2, 2)))).source
    assert 'label="\n (2, 2)" fillcolor=darkolivegreen1' in src
    assert "->" not in src
