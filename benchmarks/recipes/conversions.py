"""Recipes of the conversions and factories (ext/functions/builtin/shape.py, conversion.py and
ext/_factories.py): dtype and layout conversions, the in-place views, resizing and the
factories torch has beyond zeros and arange; and the aten-level normalizations
(nn_ops/normalization.py) and dropout's gradient."""

FAMILIES = [
    ("conversions", """
        (x * 1).t_()
        (b * 1).transpose_(0, 2)
        (v * 1).unsqueeze_(0)
        (u * 1).squeeze_()
        (u * 1).squeeze_(0)
        (u * 1).squeeze_((0, 2))
        x.to(T.float32)
        x.to(T.float64, copy=True)
        x.float()
        x.half().double()
        T.native_batch_norm(b, v, w, None, None, True, 0.1, 1e-5)[0]
        T.native_batch_norm(b, v, w, k[0], k[1], False, 0.1, 1e-5)[0]
        T.native_group_norm(b, v, w, 2, 4, 4, 2, 1e-5)[0]
        T.native_layer_norm(x, (4,), v, w, 1e-5)[0]
        T.ops.aten.native_dropout_backward(x, mask, 2.0)
    """, True),
    ("conversions_untracked", """
        k.byte()
        k.char()
        k.short()
        k.int()
        k.to(T.float32, memory_format=T.contiguous_format)
        k.clone().resize_(16)
        k.clone().resize_as_(v)
        T.empty_strided((4, 4), (1, 4)).zero_()
        x.new_empty_strided((4, 4), (1, 4)).zero_()
        T.empty_permuted((2, 4, 4), (2, 0, 1)).zero_()
        T.scalar_tensor(2.5)
        T.logspace(-2, 2, 16)
        T.logspace(0, 3, 8, base=2.0, dtype=T.int64)
    """, False),
]
