"""The C++ standard library's sort routines (GCC's nth_element, sort, partial_sort), step by
step, over (value, place) pairs: where values tie, torch's CPU kernels (topk, kthvalue,
multinomial's draw) return the places these routines leave, and only a replay finds them."""

from __future__ import annotations

__all__ = ["top_places", "introsort"]


def top_places(row: list, k: int, largest: bool, ordered: bool) -> list:
    """The places of the ``k`` values torch's CPU topk picks among ties: the C++ library's
    partial sort of (value, place) pairs for a small k, else its nth_element and then a sort
    of the first k - 1, followed step by step."""
    pairs = [(v, i) for i, v in enumerate(row)]
    if largest:
        def comp(a, b) -> bool:
            return (a[0] != a[0] and b[0] == b[0]) or a[0] > b[0]  # (nan first)
    else:
        def comp(a, b) -> bool:
            return (a[0] == a[0] and b[0] != b[0]) or a[0] < b[0]  # (nan last)
    if k * 64 <= len(pairs):
        _heap_select(pairs, 0, k, len(pairs), comp)
        _sort_heap(pairs, 0, k, comp)
    else:
        _introselect(pairs, k - 1, comp)
        if ordered:
            introsort(pairs, k - 1, comp)
    return [i for _, i in pairs[:k]]


def _introselect(q: list, nth: int, comp) -> None:
    """Partition ``q`` in place around place ``nth`` as the C++ library's nth_element does
    (median-of-three pivots, an insertion sort of the last few, a heap when too deep)."""
    first, last = 0, len(q)
    depth = 2 * (len(q).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last, comp)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        cut = _partition(q, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last, comp)


def introsort(q: list, last: int, comp) -> None:
    """Sort ``q[:last]`` in place as the C++ library's sort does (partitions down to runs of
    16, a heap sort when too deep, then one insertion sort)."""
    def loop(first: int, last: int, depth: int) -> None:
        while last - first > 16:
            if depth == 0:
                _heap_select(q, first, last, last, comp)
                _sort_heap(q, first, last, comp)
                return
            depth -= 1
            cut = _partition(q, first, last, comp)
            loop(cut, last, depth)
            last = cut

    if last > 1:
        loop(0, last, 2 * (last.bit_length() - 1))
        _insertion_sort(q, 0, last, comp)


def _heap_select(q: list, first: int, middle: int, last: int, comp) -> None:
    # a heap of q[first:middle]; each later element that belongs before its top replaces it
    n = middle - first
    for parent in range((n - 2) // 2, -1, -1) if n >= 2 else ():
        _adjust_heap(q, first, parent, n, q[first + parent], comp)
    for i in range(middle, last):
        if comp(q[i], q[first]):
            value, q[i] = q[i], q[first]
            _adjust_heap(q, first, 0, n, value, comp)


def _sort_heap(q: list, first: int, last: int, comp) -> None:
    while last - first > 1:
        last -= 1
        value, q[last] = q[last], q[first]
        _adjust_heap(q, first, 0, last - first, value, comp)


def _adjust_heap(q: list, first: int, hole: int, n: int, value, comp) -> None:
    # the hole sinks to a leaf along the larger children, then value rises from there
    top, child = hole, hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if comp(q[first + child], q[first + child - 1]):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and comp(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value


def _partition(q: list, first: int, last: int, comp) -> int:
    # the median of three moved to ``first`` is the pivot; Hoare's partition of the rest
    _median_to_first(q, first, first + 1, first + (last - first) // 2, last - 1, comp)
    lo, hi = first + 1, last
    while True:
        while lo < last - 1 and comp(q[lo], q[first]):
            lo += 1
        hi -= 1
        while hi > first and comp(q[first], q[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        q[lo], q[hi] = q[hi], q[lo]
        lo += 1


def _median_to_first(q: list, result: int, a: int, b: int, c: int, comp) -> None:
    if comp(q[a], q[b]):
        pick = b if comp(q[b], q[c]) else c if comp(q[a], q[c]) else a
    else:
        pick = a if comp(q[a], q[c]) else c if comp(q[b], q[c]) else b
    q[result], q[pick] = q[pick], q[result]


def _insertion_sort(q: list, first: int, last: int, comp) -> None:
    for i in range(first + 1, last):
        value, j = q[i], i
        if comp(value, q[first]):
            q[first + 1:i + 1] = q[first:i]
            q[first] = value
            continue
        while comp(value, q[j - 1]):
            q[j] = q[j - 1]
            j -= 1
        q[j] = value
