"""The thread-local autograd state: grad mode, inference mode and the other global switches.

Every mode that torch keeps per thread lives here, in one place, so that a reader can see all the
global state of the engine at once.
"""

from __future__ import annotations

import threading
from operator import attrgetter


def _switch(name: str, doc: str) -> property:
    """A rare mode whose setter keeps ``special`` right (its value lives in ``_<name>``)."""
    field = "_" + name

    def set_(state: _State, value) -> None:
        setattr(state, field, value)
        state.special = bool(state._inference or state._anomaly or state._saved_hooks is not None
                             or state._fw_level is not None)

    return property(attrgetter(field), set_, doc=doc)


class _State(threading.local):
    # Class attributes are the defaults each new thread starts from.
    grad_enabled = True
    # True while any of inference mode, anomaly mode, saved-tensor hooks or a forward-AD level
    # is on: ops read this one flag instead of four. Derived: the four setters keep it.
    special = False
    _inference = _anomaly = False
    _saved_hooks = _fw_level = None
    inference = _switch("inference", "Inference mode is on.")
    anomaly = _switch("anomaly", "Anomaly mode is on.")
    saved_hooks = _switch("saved_hooks", "The innermost saved_tensors_hooks (pack, unpack).")
    fw_level = _switch("fw_level", "The forward-AD level in use (None outside dual_level).")
    # While disable_saved_tensors_hooks is active: its error message.
    saved_hooks_disabled = None
    anomaly_check_nan = True
    # For each backward running on this thread (innermost last): whether it was asked for the
    # gradients of given inputs (autograd.grad, backward(inputs=...)).
    backward_inputs = ()


STATE = _State()
