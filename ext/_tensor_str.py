"""Text rendering of tensors, matching ``repr(torch.Tensor)`` character for character.

The module works on plain NumPy arrays plus a little metadata (dtype name, autograd state),
so it has no dependency on the tensor class that uses it.  Options are process-wide, like
``torch.set_printoptions``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "PRINT_OPTS",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
    "tensor_repr",
]


@dataclasses.dataclass
class _PrinterOptions:
    """Current print settings; ``sci_mode=None`` lets each tensor choose for itself."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

_PROFILES: dict[str, dict[str, Any]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set the options used by :func:`tensor_repr`, with ``torch.set_printoptions`` semantics.

    Args:
        precision: digits after the decimal point for floating point output (default 4).
        threshold: element count above which the output is summarised with ``...``
            (default 1000).
        edgeitems: items kept at the beginning and end of each summarised dimension
            (default 3).
        linewidth: characters per line used to decide where rows wrap (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; applied first, so the other
            arguments override it.  Unknown names are ignored, as in torch.
        sci_mode: force scientific notation on (True) or off (False); None chooses it
            per tensor.  Like torch, this is reset on every call, even when omitted.
    """
    if profile is not None and profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return the current options as keyword arguments for :func:`set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Temporarily apply :func:`set_printoptions` arguments inside a ``with`` block."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


class _Formatter:
    """Chooses one text layout (fixed, integer-valued or scientific) and a column width.

    It is built from the values that will actually be shown (the summarised corners of a
    large tensor), so hidden values never influence the layout.
    """

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)

        if not self.floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
            return

        # Float16/float32 widen to float64 exactly, so the decisions below match torch,
        # which also does its range arithmetic in double precision.
        wide = flat.astype(np.float64)
        shown = wide[np.isfinite(wide) & (wide != 0)]
        if shown.size == 0:
            return

        magnitudes = np.abs(shown)
        smallest = magnitudes.min()
        largest = magnitudes.max()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = bool(
                largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
            )
        else:
            self.sci_mode = PRINT_OPTS.sci_mode

        precision = PRINT_OPTS.precision
        if self.sci_mode:
            texts = [f"{v:.{precision}e}" for v in shown.tolist()]
            self.max_width = max(self.max_width, *map(len, texts))
        elif self.int_mode:
            # The trailing "." that marks a float is added at format time; reserve room.
            texts = [f"{v:.0f}" for v in shown.tolist()]
            self.max_width = max(self.max_width, *(len(t) + 1 for t in texts))
        else:
            texts = [f"{v:.{precision}f}" for v in shown.tolist()]
            self.max_width = max(self.max_width, *map(len, texts))

    def width(self) -> int:
        """The column width every formatted element is padded to."""
        return self.max_width

    def format(self, value: float | int | bool) -> str:
        """Render one element, right-aligned to the column width."""
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            # nan/inf carry no "." because they are already visibly non-integers.
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{PRINT_OPTS.precision}f}"
        return text.rjust(self.max_width)


class _ComplexFormatter:
    """Pairs independent formatters for the real and imaginary parts."""

    def __init__(self, values: np.ndarray) -> None:
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)

    def width(self) -> int:
        """Combined width of one element: real, imaginary and the ``j`` suffix."""
        return self.real.width() + self.imag.width() + 1

    def format(self, value: complex) -> str:
        """Render ``a+bj``, with the imaginary sign taken from its own formatting."""
        real_text = self.real.format(value.real)
        imag_text = (self.imag.format(value.imag) + "j").lstrip()
        if imag_text[0] in "+-":
            return real_text + imag_text
        return real_text + "+" + imag_text


_AnyFormatter = _Formatter | _ComplexFormatter


def _edge_indices(size: int, edgeitems: int) -> np.ndarray:
    """Indices kept along one axis of a summarised tensor."""
    if size > 2 * edgeitems:
        return np.r_[0:edgeitems, size - edgeitems : size]
    return np.arange(size)


def _summarized_data(values: np.ndarray) -> np.ndarray:
    """The sub-array of values that a summarised print actually shows."""
    edgeitems = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        # torch takes ``t[:0]`` and ``t[-0:]`` here, and the latter is the whole vector.
        if not edgeitems:
            return values
        return values[_edge_indices(values.shape[0], edgeitems)]
    if not edgeitems:
        return values[tuple(slice(0, 0) for _ in range(values.ndim))]
    return values[np.ix_(*(_edge_indices(n, edgeitems) for n in values.shape))]


def _vector_str(values: np.ndarray, indent: int, summarize: bool, fmt: _AnyFormatter) -> str:
    """Render a 1-d array, wrapping so each line fits in ``linewidth``."""
    edgeitems = PRINT_OPTS.edgeitems
    # Each element occupies its width plus the ", " separator.
    element_length = fmt.width() + 2
    per_line = max(1, (PRINT_OPTS.linewidth - indent) // element_length)

    if summarize and not edgeitems:
        items = ["..."]
    elif summarize and values.shape[0] > 2 * edgeitems:
        items = (
            [fmt.format(v) for v in values[:edgeitems].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in values[-edgeitems:].tolist()]
        )
    else:
        items = [fmt.format(v) for v in values.tolist()]

    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values: np.ndarray, indent: int, summarize: bool, fmt: _AnyFormatter) -> str:
    """Render an array of any rank; sub-arrays are separated by ``ndim - 1`` newlines."""
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, fmt)

    edgeitems = PRINT_OPTS.edgeitems
    size = values.shape[0]
    if summarize and size > 2 * edgeitems:
        slices = (
            [_nested_str(values[i], indent + 1, summarize, fmt) for i in range(edgeitems)]
            + ["..."]
            + [
                _nested_str(values[i], indent + 1, summarize, fmt)
                for i in range(size - edgeitems, size)
            ]
        )
    else:
        slices = [_nested_str(values[i], indent + 1, summarize, fmt) for i in range(size)]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(slices) + "]"


def _body_str(values: np.ndarray, indent: int) -> str:
    """Render the bracketed contents of a non-empty tensor."""
    summarize = values.size > PRINT_OPTS.threshold
    shown = _summarized_data(values) if summarize else values
    fmt: _AnyFormatter
    if values.dtype.kind == "c":
        fmt = _ComplexFormatter(shown)
    else:
        fmt = _Formatter(shown)
    return _nested_str(values, indent, summarize, fmt)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, key=value`` suffixes, moving one to a new line when it would overflow."""
    parts = [text]
    # Mirrors torch's arithmetic, which overestimates the current line by two characters.
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _default_complex_name(default_dtype_name: str) -> str:
    """The complex dtype torch treats as default alongside a given default float dtype."""
    return "complex128" if default_dtype_name == "float64" else "complex64"


def tensor_repr(
    values: np.ndarray,
    *,
    dtype_name: str,
    default_dtype_name: str = "float32",
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    namespace: str = "ext",
) -> str:
    """Return the text torch prints for a tensor, with `namespace` where torch prints `torch`.

    Args:
        values: the tensor's values and shape (0-d for scalars), in a NumPy dtype that
            holds them exactly.
        dtype_name: the tensor's dtype without namespace, e.g. ``"float32"`` or ``"int64"``.
        default_dtype_name: the current default floating point dtype; tensors of that
            dtype (and int64, bool, the matching complex dtype) print no ``dtype=``.
        requires_grad: whether a leaf requires grad; ignored when ``grad_fn_name`` is set,
            because a grad_fn already implies it.
        grad_fn_name: class name of the node that produced a non-leaf tensor.
        namespace: module name printed in ``dtype=<namespace>.<dtype>``.
    """
    values = np.asarray(values)
    if values.dtype.name == "bfloat16":
        # (ml_dtypes' type, which NumPy formats as an opaque kind: torch prints it through
        # float32, which holds every bfloat16 value exactly)
        values = values.astype(np.float32)
    prefix = "tensor("
    indent = len(prefix)
    dtype_suffix = f"dtype={namespace}.{dtype_name}"
    suffixes: list[str] = []

    if values.size == 0:
        # NumPy prints the shape of empties unless it is (0,); torch follows suit.
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        # Nothing can be inferred from no elements, so even int64 and bool are named.
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        implicit = {default_dtype_name, _default_complex_name(default_dtype_name), "int64", "bool"}
        if dtype_name not in implicit:
            suffixes.append(dtype_suffix)
        body = _body_str(values, indent)

    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")

    return _add_suffixes(prefix + body, suffixes, indent)
