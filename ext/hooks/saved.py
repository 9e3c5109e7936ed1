"""Saved-tensor tools over ``saved_tensors_hooks``: ``SavedTensorMeter`` measures what a forward
saves for backward (bytes per node name, unique storages), ``compress_saved_tensors`` keeps
floating saved tensors in fp16/bf16 until backward needs them.

Both install their hooks on the ext engine, and on torch's too when torch is loaded, so one
``with`` block covers either kind of tensor.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._tensor import Tensor
from ..autograd.graph import saved_tensors_hooks
from .trace import _render

__all__ = ["SavedTensorMeter", "SavedRecord", "compress_saved_tensors"]


def _storage(t: Any) -> tuple[tuple, int]:
    """A key identifying ``t``'s storage and the storage's size in bytes."""
    if isinstance(t, Tensor):
        root = t._data
        while isinstance(root.base, np.ndarray):
            root = root.base
        return ("ext", root.__array_interface__["data"][0], root.nbytes), root.nbytes
    storage = t.untyped_storage()
    return ("torch", storage.data_ptr(), storage.nbytes()), storage.nbytes()


class _HooksOnBothEngines:
    """Enters ``saved_tensors_hooks(pack, unpack)`` on ext, and on torch if it is loaded."""

    def __init__(self, pack: Callable, unpack: Callable) -> None:
        self._contexts = [saved_tensors_hooks(pack, unpack)]
        torch = sys.modules.get("torch")
        if torch is not None:
            self._contexts.append(torch.autograd.graph.saved_tensors_hooks(pack, unpack))

    def __enter__(self) -> None:
        for context in self._contexts:
            context.__enter__()

    def __exit__(self, *exc: Any) -> None:
        for context in reversed(self._contexts):
            context.__exit__(*exc)


_LOW = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16"}


def _low_dtype(t: Any, low: str) -> Any:
    """The low-precision dtype to keep ``t`` in, or None to keep it as it is."""
    if not t.is_floating_point() or t.element_size() <= 2:
        return None
    namespace = sys.modules["torch"] if not isinstance(t, Tensor) else None
    if namespace is None:
        from ..functions import namespace_of
        namespace = namespace_of(t)
    return getattr(namespace, low)


class _Packed:
    """What a pack hook hands the graph: the (possibly cast) tensor, the dtype to restore and
    the meter's record number."""

    __slots__ = ("tensor", "dtype", "index")

    def __init__(self, tensor: Any, dtype: Any, index: int) -> None:
        self.tensor, self.dtype, self.index = tensor, dtype, index


def _compressor(dtype: str) -> Callable:
    if dtype not in _LOW:
        raise ValueError(f"compress_saved_tensors(): dtype must be one of {sorted(_LOW)}, "
                         f"got {dtype!r}")
    low = _LOW[dtype]

    def pack(t):
        target = _low_dtype(t, low)
        return (t, None) if target is None else (t.to(target), t.dtype)
    return pack


def _unpack(packed: _Packed) -> Any:
    t = packed.tensor
    return t if packed.dtype is None else t.to(packed.dtype)


def compress_saved_tensors(dtype: str = "fp16") -> _HooksOnBothEngines:
    """A context manager keeping the floating tensors saved for backward in ``dtype`` (``"fp16"``
    or ``"bf16"``): the pack hook casts them down, the unpack hook casts them back. Gradients
    then carry the rounding error of that dtype; tensors of 2 bytes or less are kept as they
    are."""
    cast = _compressor(dtype)

    def pack(t):
        stored, original = cast(t)
        return _Packed(stored, original, -1)
    return _HooksOnBothEngines(pack, _unpack)


@dataclass
class SavedRecord:
    """One tensor saved for backward: its shape, dtype and bytes as stored, its storage, and
    the name of the node that saved it (once :meth:`SavedTensorMeter.by_node` has found it)."""

    shape: tuple
    dtype: str
    nbytes: int
    storage: tuple
    storage_nbytes: int
    node: str | None = None


class SavedTensorMeter:
    """A context manager measuring the tensors saved for backward by the code run inside it.

    ``records`` lists every save; ``total_bytes`` adds them up as saved, ``unique_bytes`` counts
    each storage once (what the saves really keep alive, at most). ``by_node(*outputs)`` names
    the node of each save by reading the saved fields of the graph of ``outputs`` (before
    backward frees them). With ``compress="fp16"``/``"bf16"`` the saves are compressed as by
    :func:`compress_saved_tensors` and measured as stored.
    """

    def __init__(self, compress: str | None = None) -> None:
        self.records: list[SavedRecord] = []
        self._cast = _compressor(compress) if compress is not None else None
        self._reading: str | None = None
        self._context = _HooksOnBothEngines(self._pack, self._unpack)

    def _pack(self, t: Any) -> _Packed:
        original = None
        if self._cast is not None:
            t, original = self._cast(t)
        key, storage_nbytes = _storage(t)
        self.records.append(SavedRecord(tuple(t.shape), str(t.dtype).rpartition(".")[2],
                                        t.numel() * t.element_size(), key, storage_nbytes))
        return _Packed(t, original, len(self.records) - 1)

    def _unpack(self, packed: _Packed) -> Any:
        if self._reading is not None and packed.index >= 0:
            self.records[packed.index].node = self._reading
        return _unpack(packed)

    def __enter__(self) -> SavedTensorMeter:
        self._context.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)

    @property
    def count(self) -> int:
        """How many tensors were saved."""
        return len(self.records)

    @property
    def total_bytes(self) -> int:
        """The bytes of every save, a tensor saved twice counted twice."""
        return sum(r.nbytes for r in self.records)

    @property
    def unique_bytes(self) -> int:
        """The bytes of the distinct storages saved, each counted once."""
        return sum({r.storage: r.storage_nbytes for r in self.records}.values())

    def by_node(self, *outputs: Any) -> dict[str, int]:
        """Bytes saved per node name (nodes of the same name added up) in the graph of
        ``outputs``; saves the graph no longer holds are under ``"(not in graph)"``."""
        from .trace import _walk_nodes

        for fn in _walk_nodes(outputs):
            self._reading = fn.name()
            try:
                for attr in dir(fn):
                    if attr.startswith("_saved_"):
                        _read(fn, attr)
                if _is_custom(fn):
                    _read(fn, "saved_tensors")
            finally:
                self._reading = None
        totals: dict[str, int] = {}
        for r in self.records:
            name = r.node or "(not in graph)"
            totals[name] = totals.get(name, 0) + r.nbytes
        return totals

    def table(self, *outputs: Any) -> Any:
        """Bytes per node name (see :meth:`by_node`) and the totals, as a ``rich`` table."""
        from rich.table import Table

        table = Table(title=f"saved for backward: {self.count} tensors, {self.total_bytes} B "
                            f"saved, {self.unique_bytes} B in unique storages")
        table.add_column("node")
        table.add_column("bytes", justify="right")
        for name, nbytes in self.by_node(*outputs).items():
            table.add_row(name, str(nbytes))
        return table

    def report(self, *outputs: Any) -> str:
        """:meth:`table` as plain text."""
        return _render(self.table(*outputs))


def _read(fn: Any, attr: str) -> None:
    try:
        getattr(fn, attr)
    except RuntimeError:
        pass  # freed by backward: nothing to attribute


def _is_custom(fn: Any) -> bool:
    from ..viz.dot import custom_node_types
    return isinstance(fn, custom_node_types())
