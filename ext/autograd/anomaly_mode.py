"""Anomaly mode: nodes remember the forward stack that made them, and backward reports the
node (and that stack) that raised or returned NaN."""

from __future__ import annotations

import os
import traceback
import warnings
from typing import Any

import numpy as np

from .._state import STATE

# ext's package directory, with a trailing separator so that a sibling such as ext_utils/ does
# not match.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on for this thread."""
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks backward outputs for NaN."""
    return STATE.anomaly_check_nan


class detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly mode on inside a ``with`` block (torch 2.13's is not a decorator)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly, STATE.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc: Any) -> None:
        STATE.anomaly, STATE.anomaly_check_nan = self.prev


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Set anomaly mode on or off: at once as a call, restored at the end as a context."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly, STATE.anomaly_check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        STATE.anomaly, STATE.anomaly_check_nan = self.prev


def record_forward_stack(node) -> None:
    """Keep the stack of the forward call that made ``node`` (called when anomaly mode is on)."""
    frames = traceback.extract_stack()
    # Drop the engine's own frames at the end: the user's call is what helps. Frames are ext's
    # when their file is inside ext's package directory (a user's folder may be named ext too).
    while len(frames) > 1 and frames[-1].filename.startswith(_PACKAGE_DIR):
        frames.pop()
    node.metadata["traceback_"] = traceback.format_list(frames)


def warn_forward_stack(node) -> None:
    """The warning anomaly mode gives before backward raises in ``node``."""
    stack = node.metadata.get("traceback_")
    if stack is None:
        text = (f"Error detected in {node.name()}. No forward pass information available. "
                "Enable detect anomaly during forward pass for more information.")
    else:
        text = (f"Error detected in {node.name()}. Traceback of forward call that caused the "
                "error:\n" + "".join(stack))
    warnings.warn(text, UserWarning, stacklevel=4)


def apply_checked(node, grads: list, validate) -> tuple:
    """Run ``node`` and ``validate`` its outputs under anomaly mode: on an error, show its
    forward stack."""
    try:
        return validate(node, node._apply(grads))
    except Exception:
        warn_forward_stack(node)
        raise


def check_nan(node, outputs: tuple) -> None:
    """Anomaly mode's check of a node's outputs (as they flow on: validated, after its post
    hooks): a NaN raises, after showing the node's forward stack."""
    # (an output with no edge is not computed in torch, so it is not checked)
    for i, (g, edge) in enumerate(zip(outputs, node._next)):
        if g is not None and edge is not None and np.isnan(g._data).any():
            warn_forward_stack(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")
