"""Hook utilities for ext and torch tensors and modules: gradient hooks (``clip``, ``scale``,
``nan_guard``, ``register_all``), module recorders, ``GradFlow``, saved-tensor metering and
compression, and ``trace_backward``."""

from .grad import HookGroup, NanGradientWarning, clip, nan_guard, register_all, scale
from .gradflow import GradFlow
from .modules import ModuleRecorder
from .saved import SavedRecord, SavedTensorMeter, compress_saved_tensors
from .trace import BackwardTrace, TraceEvent, trace_backward

__all__ = ["clip", "scale", "nan_guard", "register_all", "HookGroup", "NanGradientWarning",
           "ModuleRecorder",
           "GradFlow", "SavedTensorMeter", "SavedRecord", "compress_saved_tensors",
           "trace_backward", "BackwardTrace", "TraceEvent"]
