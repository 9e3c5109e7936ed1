"""``ext.utils``: helpers with torch's module paths (``ext.utils.hooks``)."""

from . import hooks
from . import checkpoint
