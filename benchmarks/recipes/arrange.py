"""Recipes of the arranging ops (ext/functions/builtin/arrange.py and copies.py): stacks and
splits, tiling, rolling, triangles, diagonals, the views' copies and the scatter forms."""

FAMILIES = [
    ("arrange", """
        T.broadcast_to(v, (4, 4))
        T.broadcast_tensors(x, v)[1]
        T.block_diag(x, v)
        T.cartesian_prod(v, w)
        T.combinations(v, 2)
        T.unsafe_split(x, 2)[0]
        T.unsafe_chunk(x, 2, 1)[1]
        T.tensor_split(x, 3, 1)[0]
        T.hsplit(x, 2)[1]
        T.hstack([x, y])
        T.vstack([v, w])
        T.dstack([x, y])
        T.column_stack([v, x])
        T.atleast_3d(v)
        T.meshgrid(v, w, indexing="ij")[0]
        x.t().ravel()
        v.unflatten(0, (2, 2))
        T.movedim(b, 0, -1)
        x.repeat(2, 1)
        T.tile(v, (3,))
        T.repeat_interleave(v, 2)
        T.roll(x, 1, 0)
        T.rot90(x)
        T.fliplr(x)
        T.tril(x)
        T.triu(x, 1)
        x.diagonal()
        T.diag_embed(x)
        T.diag(v)
        T.diagflat(v, 1)
        T.diagonal_scatter(x, v)
        x.unfold(1, 2, 1)
        x.sum_to_size(1, 4)
        T.constant_pad_nd(x, (1, 1))
        x.mH
        x.H
    """),
    ("arrange-indices", """
        T.tril_indices(4, 4)
        T.triu_indices(4, 4, 1)
        T.unravel_index(idx, (2, 2))
    """, False),
    ("copies", """
        T.expand_copy(v, (4, 4))
        T.diagonal_copy(x)
        T.alias_copy(x)
        T.narrow_copy(x, 1, 1, 2)
        T.view_copy(x, (16,))
        T.permute_copy(b, (2, 0, 1))
        T.split_with_sizes_copy(x, [1, 3])[1]
        T.unbind_copy(x)[0]
        T.squeeze_copy(u)
        T.squeeze_copy(u, 0)
        T.squeeze_copy(u, (0, 2))
        T.unsqueeze_copy(x, 0)
        T.t_copy(x)
        T.transpose_copy(b, 0, 2)
        T.unfold_copy(x, 0, 2, 2)
        x.as_strided((2, 2), (4, 1), 1)
        T.as_strided_copy(x, (3,), (5,))
        T.as_strided_scatter(x, v, (4,), (5,))
        T.select_scatter(x, v, 0, 1)
        T.slice_scatter(x, y[:2], 0, 2)
    """),
]
