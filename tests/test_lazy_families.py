"""The op families that load on first use (ext.functions._lazy): ``import ext`` declares only
the core, and the first use of any of a family's names loads it; each case in a fresh process,
since what a process has loaded cannot be unloaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.ext_only


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


FAMILY = "ext.functions.builtin.pointwise.binary"


def test_import_ext_loads_no_family():
    out = _run("""
        import sys, ext
        from ext.functions._lazy import FAMILIES
        print(sorted(f for f in FAMILIES if "ext.functions.builtin." + f in sys.modules))
        print("torch" in sys.modules)
    """)
    assert out.splitlines() == ["[]", "False"]


@pytest.mark.parametrize("use", [
    "ext.tensor([1.0]).atan2(ext.tensor([2.0]))",   # a method of an instance
    "ext.Tensor.atan2",                              # the method on the class
    "ext.atan2(ext.tensor([1.0]), ext.tensor([2.0]))",  # the function
    "ext.ops.aten.atan2",                            # the aten namespace
    "ext.functions._op.lookup('atan2')",             # the registry
])
def test_the_first_use_of_a_name_loads_its_family(use):
    out = _run(f"""
        import sys, ext
        print({FAMILY!r} in sys.modules)
        {use}
        print({FAMILY!r} in sys.modules)
        print(type(ext.Tensor.__dict__["atan2"]).__name__, ext.atan2.__name__)
    """)
    assert out.splitlines() == ["False", "True", "function atan2"]


def test_a_loaded_familys_values_match_an_eager_call():
    out = _run("""
        import ext
        x, y = ext.tensor([1.0, -2.0], requires_grad=True), ext.tensor([3.0, 0.5])
        z = x.hypot(y)
        z.sum().backward()
        print(z.grad_fn.name(), [round(v, 6) for v in x.grad.tolist()])
    """)
    name, grads = out.split(" ", 1)
    assert name == "HypotBackward0"
    assert grads == str([round(1 / 10 ** 0.5, 6), round(-2 / 4.25 ** 0.5, 6)])


def test_the_package_lists_the_families_names_before_they_load():
    out = _run("""
        import sys, ext
        print("lerp" in dir(ext), hasattr(ext, "lerp"), hasattr(ext, "no_such_op"))
    """)
    assert out == "True True False"


def test_an_unknown_attribute_still_raises_attribute_error():
    out = _run("""
        import ext
        try:
            ext.tensor([1.0]).no_such_method
        except AttributeError as e:
            print(e)
    """)
    assert out == "'Tensor' object has no attribute 'no_such_method'"


def test_the_core_declares_every_overload_it_defines():
    # An overload the core dispatches must be declared with the core (its aten name and
    # method come from the declaration); one declared only in a family would lack them until
    # the family loads. (torch's NotImplemented nodes are never declared: they have no op.)
    out = _run("""
        import ext
        from ext.functions._op import Overload
        found, stack = [], [Overload]
        while stack:
            cls = stack.pop()
            stack += cls.__subclasses__()
            if "node_name" in cls.__dict__ and cls.node_name != "NotImplemented" \\
                    and not (cls._aten or cls._method):
                found.append(cls.__name__)
        print(found)
    """)
    assert out == "[]"
