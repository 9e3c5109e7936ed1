"""The layers of DESIGN.md as a check: every import inside ``ext/`` points down, except the
sanctioned seams named below, and no two layers import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.ext_only

ROOT = Path(__file__).resolve().parents[1] / "ext"

# Low to high. A module belongs to the layer of its longest matching prefix.
LAYERS = {
    "ext._tensor": 0, "ext._dtype": 0, "ext._factories": 0, "ext._state": 0,
    "ext._tensor_str": 0, "ext._args": 0, "ext._warnings": 0, "ext._arrays": 0,
    "ext._legacy": 0, "ext._random": 0, "ext._cppsort": 0,
    "ext.autograd": 1,
    "ext.functions": 2, "ext.compat": 2,
    "ext.nn": 3, "ext.optim": 3, "ext.utils": 3, "ext.hooks": 3, "ext.testing": 3,
    "ext.viz": 3,
    "ext": 4, "ext.__main__": 4, "ext.cli": 4,  # the torch-named facade and the command line
}

# (importing module, function, imported module) -> why a lower layer may reach a higher one,
# lazily, at run time. The other seam is not an import: the one method table, through which the
# op library gives the Tensor its methods when ``ext`` is imported (``functions.install``).
SEAMS = {
    ("ext._tensor", "backward", "ext.autograd"):
        "Tensor.backward drives the engine",
    ("ext._tensor", "register_hook", "ext.autograd.graph"):
        "a tensor's hook lives on its node's hook table",
    ("ext._tensor", "register_post_accumulate_grad_hook", "ext.autograd.graph"):
        "a leaf's post-accumulate hook table, with the node hooks' handle",
    ("ext._tensor", "grad_fn", "ext.autograd.views"):
        "reading a view's grad_fn after its base changed in place replays the view",
    ("ext.autograd.functional", "stacked", "ext"):
        "jacobian stacks its rows with stack, as torch's does (StackBackward0 in its graph)",
    ("ext.functions.builtin._builtin", "namespace_of", "ext"):
        "a backward body's free functions come from the module of the tensor at hand",
    ("ext.autograd.function", "_bridge", "ext.compat"):
        "the bridge: a Function applied to torch tensors runs as a torch.autograd.Function",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    while module not in LAYERS:
        module = module.rpartition(".")[0]
    return LAYERS[module]


def _imports() -> list[tuple[str, str, str]]:
    """Every import of an ext module by an ext module: (importer, enclosing function or '',
    imported module), with ``from pkg import sub`` resolved to the submodule."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for function, node in _walk(tree, ""):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
                targets = [_resolve(prefix, a.name) for a in node.names]
            else:
                targets = [_resolve(node.module, a.name) for a in node.names]
            found += [(module, function, t) for t in targets if t.split(".")[0] == "ext"]
    return found


def _walk(node: ast.AST, function: str):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield function, child
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            else function
        yield from _walk(child, inner)


def _walk_all(node: ast.AST, function: str):
    for child in ast.iter_child_nodes(node):
        yield function, child
        inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            else function
        yield from _walk_all(child, inner)


def _resolve(module: str, name: str) -> str:
    sub = ROOT.parent.joinpath(*f"{module}.{name}".split("."))
    return f"{module}.{name}" if sub.is_dir() or sub.with_suffix(".py").exists() else module


def test_imports_point_down_except_at_the_named_seams():
    upward = sorted({(m, f, t) for m, f, t in _imports()
                     if _layer(t) > _layer(m) and (m, f, t) not in SEAMS})
    assert upward == []


def test_every_named_seam_is_still_there():
    assert set(SEAMS) <= set(_imports())


def test_no_import_cycle_among_the_layers():
    # What runs when ext is imported (module-level imports, seams included) only points down:
    # a seam is always a lazy import inside a function.
    edges = {(_layer(m), _layer(t)) for m, f, t in _imports() if not f and m != t}
    assert sorted((a, b) for a, b in edges if a < b) == []


def test_only_the_method_table_gives_the_tensor_attributes():
    # No patch of the Tensor besides the method table's install (ext.functions._lazy: at
    # import, and when a family that waits for first use loads): no setattr(Tensor, ...) or
    # Tensor.name = ... anywhere else, nor a slot on _tensor that a higher layer fills.
    patches = []
    for path in sorted(ROOT.rglob("*.py")):
        for function, node in _walk_all(ast.parse(path.read_text()), ""):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr" and \
                    getattr(node.args[0], "id", "") == "Tensor":
                patches.append((_module_name(path), function))
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                for target in getattr(node, "targets", [getattr(node, "target", None)]):
                    while isinstance(target, ast.Subscript):
                        target = target.value
                    if isinstance(target, ast.Attribute) and \
                            getattr(target.value, "id", "") in ("Tensor", "_tensor"):
                        patches.append((_module_name(path), function))
    assert patches == [("ext.functions._lazy", "install"), ("ext.functions._lazy", "_install_new")]
