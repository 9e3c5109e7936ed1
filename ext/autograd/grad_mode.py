"""Grad modes: no_grad, enable_grad, set_grad_enabled and inference_mode.

Each is a context manager and a decorator (also of generator functions), and each changes the
thread-local state of ``ext._state`` only.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from .._state import STATE

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


def is_grad_enabled() -> bool:
    """Whether operations are recorded for backward on this thread."""
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode``."""
    return STATE.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions and generator functions."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("Cannot decorate classes; it is ambiguous")
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return decorated

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            # The mode holds while the generator runs, and not while the caller does.
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as e:
                return e.value

        return generator

    def clone(self):
        """A fresh manager with the same settings (each ``with`` needs its own saved state)."""
        return self.__class__()

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, *exc: Any) -> None:
        raise NotImplementedError


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Allows ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):  # noqa: N801 - torch's name
    """Disable gradient recording: results of ops do not require grad."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):  # noqa: N801 - torch's name
    """Enable gradient recording (inside ``no_grad``, for example)."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Set grad mode on or off; as a call it takes effect at once, as a context it restores."""

    def __init__(self, mode: bool) -> None:
        if type(mode) is not bool:
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self.prev = STATE.grad_enabled
        self.mode = mode
        STATE.grad_enabled = mode

    def __call__(self, func):
        STATE.grad_enabled = self.prev
        return super().__call__(func)

    def __enter__(self) -> None:
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self.prev

    def clone(self) -> set_grad_enabled:
        """A manager with the same mode, leaving the current mode as it is until entered."""
        prev = STATE.grad_enabled
        manager = self.__class__(self.mode)
        STATE.grad_enabled = prev
        manager.prev = prev
        return manager


class inference_mode(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Like ``no_grad``, and tensors made inside are inference tensors (no version counter)."""

    def __new__(cls, mode_or_func=True):
        if isinstance(mode_or_func, bool):
            return super().__new__(cls)
        return cls()(mode_or_func)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode if isinstance(mode, bool) else True
        self.prev = (True, False)

    def __enter__(self) -> None:
        self.prev = (STATE.grad_enabled, STATE.inference)
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled, STATE.inference = self.prev

    def clone(self) -> inference_mode:
        """A manager with the same mode."""
        return self.__class__(self.mode)
