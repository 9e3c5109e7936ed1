"""``ext.backends``: the backend switches scripts set (``ext.backends.cudnn.benchmark =
True``); ext has no such backends, so the flags are kept and change nothing."""

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
