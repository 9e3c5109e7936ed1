"""Writing NumPy arrays as torch writes tensors: through a read-only broadcast view (an
``expand``) into the memory it aliases. Values and forward-mode tangents are written alike
(``ext.functions.builtin.inplace`` and ``ext.autograd.forward_ad``)."""

from __future__ import annotations

import numpy as np

__all__ = ["write_array"]


def write_array(td: np.ndarray, rd: np.ndarray) -> bool:
    """Copy ``rd`` (broadcast, cast) into ``td``; a read-only expand is written through its
    aliases into the memory it views, as torch writes an expanded tensor (values and tangents
    alike). False, writing nothing, when no writable array owns that memory."""
    if td.flags.writeable:
        np.copyto(td, rd, casting="unsafe")
        return True
    repeats = _repeats_elements(td)
    alias = _writable_alias(td)
    if alias is None:
        return False
    if not repeats:
        np.copyto(alias, rd, casting="unsafe")
        return True
    # Write only what the op changed, as torch's kernel does: an unchanged alias of a changed
    # element must not write the old value back over it.
    new = np.broadcast_to(rd.astype(td.dtype, copy=False), td.shape)
    bits = f"u{td.itemsize}"
    changed = np.ascontiguousarray(new).view(bits) != np.ascontiguousarray(td).view(bits)
    alias[changed] = new[changed]
    return True


def _repeats_elements(d: np.ndarray) -> bool:
    # torch's has_internal_overlap: a stride 0 over a size above 1 (an empty tensor has none,
    # whatever NumPy's strides say)
    return d.size > 1 and any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape))


def _writable_alias(d: np.ndarray) -> np.ndarray | None:
    """A writable array over the same memory as ``d``, a read-only broadcast view (``expand``):
    torch writes through such views, each element landing where its alias points. None when
    no writable array owns that memory."""
    owner = d
    while not owner.flags.writeable:
        base = owner.base
        if base is not None and not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # through as_strided's interface holder
        if base is None:
            break
        owner = base
    if not owner.flags.writeable:
        return None
    item = d.itemsize
    offset = (d.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // item
    start = owner.reshape(-1)[offset:] if owner.flags.c_contiguous else owner
    return np.lib.stride_tricks.as_strided(start, shape=d.shape, strides=d.strides)
