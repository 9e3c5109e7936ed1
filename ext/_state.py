"""The thread-local autograd state: grad mode, inference mode and the other global switches.

Every mode that torch keeps per thread lives here, in one place, so that a reader can see all the
global state of the engine at once.
"""

from __future__ import annotations

import threading


class _State(threading.local):
    # Class attributes are the defaults each new thread starts from.
    grad_enabled = True
    inference = False
    # The innermost (pack, unpack) pair of saved_tensors_hooks, or None.
    saved_hooks = None
    # While disable_saved_tensors_hooks is active: its error message.
    saved_hooks_disabled = None
    anomaly = False
    anomaly_check_nan = True
    # The forward-AD level in use (None outside dual_level).
    fw_level = None
    # For each backward running on this thread (innermost last): whether it was asked for the
    # gradients of given inputs (autograd.grad, backward(inputs=...)).
    backward_inputs = ()
    # True while any of inference mode, anomaly mode, saved-tensor hooks or a forward-AD level
    # is on: ops read this one flag instead of four.
    special = False


def refresh_special() -> None:
    """Recompute ``STATE.special`` after a change of inference, anomaly or saved-hook state."""
    STATE.special = (STATE.inference or STATE.anomaly or STATE.saved_hooks is not None
                     or STATE.fw_level is not None)


STATE = _State()
