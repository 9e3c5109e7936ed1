"""``ext.utils.checkpoint``: activation checkpointing, which trades compute for memory.

A checkpointed region does not keep the tensors its ops save for backward; it keeps its inputs
and runs again in backward to get them back. Two variants, as in torch:

- **reentrant** (``use_reentrant=True``, still the default when the argument is omitted): a custom
  Function, ``CheckpointFunction``, runs the region under ``no_grad``; its backward recomputes
  the region with grad enabled and calls ``backward`` on it, inside the running backward (the
  engine is reentrant).
- **non-reentrant** (``use_reentrant=False``): the region runs with grad enabled under
  saved-tensor hooks that keep a small placeholder (a ``_Holder``) instead of each saved tensor.
  The first unpack in backward reruns the region under other hooks that fill the placeholders;
  the graph is the ordinary one (``y.grad_fn`` is the real op), so ``autograd.grad``,
  ``retain_graph`` and double backward work.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from .._tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "check_backward_validity",
           "detach_variable", "noop_context_fn"]

# ext.utils is first imported by ext.autograd.graph (for its hook handles), before the autograd
# package is complete: autograd names are therefore imported where they are used, and the public
# CheckpointFunction (a Function subclass) is created on first access (module __getattr__).

_REENTRANT_WARNING = (
    "ext.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
    "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)
_SEQUENTIAL_WARNING = (
    "ext.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
    "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)
_REENTRANT_GRAD_ERROR = (
    "When use_reentrant=True, ext.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)
_DEBUG_TIP = (
    "\nTip: To see a more detailed error message, pass `debug=True` to\n"
    "`ext.utils.checkpoint.checkpoint(...)`.\n"
)


class CheckpointError(RuntimeError):
    """Raised when a non-reentrant checkpoint's recomputation does not match its forward."""


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    """The default ``context_fn``: no context around the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors in ``inputs`` that keep their ``requires_grad``; other
    values pass through."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    return tuple(inp.detach().requires_grad_(inp.requires_grad) if isinstance(inp, Tensor)
                 else inp for inp in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn when no tensor in ``inputs`` requires grad (a reentrant checkpoint then has no
    gradient to give)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        # Points at the user's checkpoint() call, through CheckpointFunction.apply and forward.
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      UserWarning, stacklevel=5)


# ---- RNG state: a recomputation draws the same random numbers as the forward --------------------

def _get_rng_state() -> tuple:
    from .._factories import default_generator

    return copy.deepcopy(default_generator._rng), default_generator._seed


@contextlib.contextmanager
def _fork_rng(state: tuple | None):
    """Run with the default generator in ``state`` (when given), then restore the surrounding
    stream as if nothing had been drawn."""
    if state is None:
        yield
        return
    from .._factories import default_generator

    outer = default_generator._rng, default_generator._seed
    default_generator._rng, default_generator._seed = copy.deepcopy(state[0]), state[1]
    try:
        yield
    finally:
        default_generator._rng, default_generator._seed = outer


# ---- Reentrant checkpoint -----------------------------------------------------------------------

def _is_checkpoint_valid() -> bool:
    """Whether the innermost running backward may run a reentrant checkpoint: not when it was
    asked for the gradients of given ``inputs`` (``autograd.grad``, ``backward(inputs=...)``),
    which a nested ``backward`` cannot deliver."""
    from .._state import STATE

    running = STATE.backward_inputs
    return not running or not running[-1]


def _make_checkpoint_function() -> type:
    from ..autograd import backward
    from ..autograd.function import Function
    from ..autograd.grad_mode import enable_grad, no_grad

    class CheckpointFunction(Function):
        """The reentrant checkpoint: forward under ``no_grad``, keeping only the inputs;
        backward recomputes the region with grad enabled and backpropagates through it."""

        @staticmethod
        def forward(ctx, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
            check_backward_validity(args)
            ctx.run_function = run_function
            ctx.fwd_rng_state = _get_rng_state() if preserve_rng_state else None
            # Non-tensor inputs stay on ctx; tensors are saved (version-checked) and put back in
            # their places in backward.
            ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
            ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
            ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
            with no_grad():
                return run_function(*args)

        @staticmethod
        def backward(ctx, *grad_outputs: Tensor) -> tuple:
            if not _is_checkpoint_valid():
                raise RuntimeError(_REENTRANT_GRAD_ERROR)
            inputs = list(ctx.inputs)
            for idx, t in zip(ctx.tensor_indices, ctx.saved_tensors):
                inputs[idx] = t
            with _fork_rng(ctx.fwd_rng_state):
                detached_inputs = detach_variable(tuple(inputs))
                with enable_grad():
                    outputs = ctx.run_function(*detached_inputs)
            if isinstance(outputs, Tensor):
                outputs = (outputs,)
            pairs = [(out, g) for out, g in zip(outputs, grad_outputs)
                     if isinstance(out, Tensor) and out.requires_grad]
            if not pairs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                                   "not necessary")
            backward([out for out, _ in pairs], [g for _, g in pairs])
            grads = tuple(inp.grad if isinstance(inp, Tensor) else None
                          for inp in detached_inputs)
            return (None, None) + grads

    CheckpointFunction.__qualname__ = "CheckpointFunction"
    return CheckpointFunction


def _checkpoint_function() -> type:
    cls = globals().get("CheckpointFunction")
    if cls is None:
        cls = globals()["CheckpointFunction"] = _make_checkpoint_function()
    return cls


def __getattr__(name: str) -> Any:
    if name == "CheckpointFunction":
        return _checkpoint_function()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- Non-reentrant checkpoint -------------------------------------------------------------------

class _StopRecomputationError(Exception):
    """Ends a recomputation once every tensor the graph still needs has been recomputed."""


class _Holder:
    """What the graph keeps in place of a tensor saved inside a checkpointed region.

    A recomputation puts the recomputed tensor in ``value``; unpacking takes it out again, so a
    recomputed tensor lives only until the backward step that needs it (even with
    ``retain_graph=True``: a later backward recomputes).
    """

    __slots__ = ("value", "__weakref__")

    def __init__(self) -> None:
        self.value: Tensor | None = None


def _default_meta(x: Tensor) -> dict:
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_METADATA_FNS: dict[str, Callable] = {"default": _default_meta, "none": lambda _: None}


def _describe(x: Tensor) -> str:
    fn = x.grad_fn
    return (f"shape={list(x.shape)}, dtype={x.dtype}, "
            f"grad_fn={fn.name() if fn is not None else None}")


class _CheckpointFrame:
    """The state of one non-reentrant checkpointed call: its saved inputs, a weak reference to
    each holder in the order the forward saved them, and their metadata."""

    def __init__(self, recompute_fn: Callable, early_stop: bool, metadata_fn: Callable,
                 debug: bool) -> None:
        self.recompute_fn = recompute_fn
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.saved_args: list = []
        self.weak_holders: list[weakref.ref] = []
        self.x_metadatas: list = []
        self.recomp_counter = 0
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        # With debug=True: what each pass saved, for the error message.
        self.forward_log: list[str] | None = [] if debug else None
        self.recompute_log: list[str] = []

    def save_inputs(self, args: tuple) -> None:
        from ..autograd.graph import save

        # Saved like any saved tensor: version-checked, and through the hooks of an enclosing
        # checkpoint, which then recomputes this one's inputs first.
        self.saved_args = [save(a, False) if isinstance(a, Tensor) else a for a in args]

    def get_inputs(self) -> list:
        from ..autograd.graph import SavedTensor

        return [a.unpack(None) if isinstance(a, SavedTensor) else a for a in self.saved_args]

    def pack(self, x: Tensor) -> _Holder:
        """Forward: keep a placeholder instead of ``x``, and ``x``'s metadata."""
        from ..autograd.grad_mode import no_grad

        holder = _Holder()
        self.weak_holders.append(weakref.ref(holder))
        with no_grad():
            self.x_metadatas.append(self.metadata_fn(x))
        if self.forward_log is not None:
            self.forward_log.append(_describe(x))
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        """Backward: the recomputed tensor (recomputing the region if it is not there).

        torch tells backward passes apart by their graph-task id and raises a CheckpointError
        when one backward unpacks the same tensor twice; the engine here exposes no such id, so
        a second unpack simply recomputes the region again.
        """
        if holder.value is None:
            try:
                self.recompute()
            except CheckpointError as e:
                if self.forward_log is None:
                    raise
                raise CheckpointError(self._debug_message(e)) from e
        value = holder.value
        holder.value = None
        return value

    def recompute(self) -> None:
        """Rerun the region, filling the holders that are still alive."""
        from ..autograd.grad_mode import enable_grad
        from ..autograd.graph import saved_tensors_hooks

        args = self.get_inputs()
        self.recomp_counter = 0
        self.recompute_log = []
        try:
            with saved_tensors_hooks(self._recompute_pack, _identity), enable_grad():
                self.recompute_fn(*args)
        except _StopRecomputationError:
            pass
        self.check_recomputed_tensors_match()

    def _recompute_pack(self, x: Tensor) -> Tensor:
        if self.forward_log is not None:
            self.recompute_log.append(_describe(x))
        x = x.detach() if x.requires_grad else x
        idx = self.recomp_counter
        self.recomp_counter += 1
        if idx >= len(self.weak_holders):
            if not self.forward_completed:
                # A backward inside the checkpointed function itself, without early stop: the
                # forward had not saved everything yet.
                self.ignore_saved_mismatch = True
                return x
            raise CheckpointError("ext.utils.checkpoint: trying to save more tensors during "
                                  "recomputation than during the original forward pass.\n"
                                  f"{_DEBUG_TIP}")
        holder = self.weak_holders[idx]()
        # A holder is gone once backward has used it (without retain_graph): nothing to fill.
        if holder is not None:
            holder.value = x
        if self.early_stop and self.recomp_counter == len(self.weak_holders):
            raise _StopRecomputationError
        return x

    def check_recomputed_tensors_match(self) -> None:
        """Same number of saved tensors, and the same metadata, as in the forward."""
        if self.ignore_saved_mismatch:
            return
        if len(self.weak_holders) != self.recomp_counter:
            raise CheckpointError(
                "ext.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter}.\n"
                f"{_DEBUG_TIP}")
        mismatched = ""
        for idx, ref in enumerate(self.weak_holders):
            holder = ref()
            if holder is None:
                continue
            saved_meta = self.x_metadatas[idx]
            recomputed_meta = self.metadata_fn(holder.value)
            if saved_meta != recomputed_meta:
                mismatched += (f"tensor at position {idx}:\n"
                               f"saved metadata: {saved_meta}\n"
                               f"recomputed metadata: {recomputed_meta}\n")
        if mismatched:
            raise CheckpointError(
                "ext.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{mismatched}.\n"
                f"{_DEBUG_TIP}")

    def _debug_message(self, error: CheckpointError) -> str:
        def listing(log: list[str]) -> str:
            return "\n".join(f"  {i}: {entry}" for i, entry in enumerate(log)) or "  (none)"

        return (f"{error}\n"
                "Tensors saved for backward during the original forward:\n"
                f"{listing(self.forward_log)}\n"
                "Tensors saved for backward during recomputation:\n"
                f"{listing(self.recompute_log)}\n"
                "ERROR: Detected non-determinism while running activation checkpointing: the "
                "recomputation did not save the same tensors as the original forward.")


def _identity(x: Tensor) -> Tensor:
    return x


def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool,
                                  context_fn: Callable, determinism_check: str, debug: bool,
                                  early_stop: bool, args: tuple, kwargs: dict) -> Any:
    from ..autograd.grad_mode import is_grad_enabled
    from ..autograd.graph import saved_tensors_hooks

    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _METADATA_FNS:
        raise ValueError(f"determinism_check should be one of {list(_METADATA_FNS)}, but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    rng_state = _get_rng_state() if preserve_rng_state else None

    def recompute_fn(*inputs: Any) -> None:
        with _fork_rng(rng_state), recompute_context:
            function(*inputs, **kwargs)

    frame = _CheckpointFrame(recompute_fn, early_stop, _METADATA_FNS[determinism_check], debug)
    if not is_grad_enabled():
        return function(*args, **kwargs)
    frame.save_inputs(args)
    suppressed = True
    with saved_tensors_hooks(frame.pack, frame.unpack):
        with forward_context:
            ret = function(*args, **kwargs)
            suppressed = False
    if suppressed:
        raise RuntimeError("ext.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. This "
                           "is not supported because checkpoint cannot return a value for a "
                           "failed forward.")
    frame.forward_completed = True
    return ret


# ---- Public API ---------------------------------------------------------------------------------

def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[ContextManager, ContextManager]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its saved tensors: backward recomputes
    them.

    ``use_reentrant`` should be given: without it a UserWarning is raised and the reentrant
    variant is used, as in torch 2.13. ``preserve_rng_state`` (keyword, default True) makes the
    recomputation draw the same random numbers as the forward. The other keywords apply to the
    non-reentrant variant only: ``context_fn`` returns the contexts for the forward and for the
    recomputation; ``determinism_check`` (``"default"`` compares the shape, dtype and device of
    what the recomputation saves, ``"none"`` does not); ``debug`` lists what each pass saved in
    a CheckpointError; ``early_stop`` ends the recomputation once everything needed is back.
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return _checkpoint_function().apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         debug, early_stop, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002 - torch's name
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a list of callables or a module with ``children()``) one after
    another on ``input``, in ``segments`` chunks: every chunk but the last is checkpointed."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run_function(start: int, end: int, functions: list) -> Callable:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    if not isinstance(functions, (list, tuple)) and hasattr(functions, "children"):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    # The last chunk runs as usual: its saved tensors are needed first in backward.
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
