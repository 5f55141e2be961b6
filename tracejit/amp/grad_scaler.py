"""Dynamic loss scaling: ``GradScaler``, with ``torch.amp.GradScaler``'s semantics and defaults.

Low-precision gradients underflow to zero when they are small. Multiplying the loss by a large
scale before differentiating lifts them into range; the gradients are then divided by it
("unscaled") before the optimizer uses them. A scale that is too large overflows to inf/NaN
instead: that step is skipped and the scale shrinks (``backoff_factor``). After
``growth_interval`` finite steps in a row it grows again (``growth_factor``). The rule is
PyTorch's ``_amp_update_scale_``, reproduced to the bit (benchmarks/amp_scaler_vs_torch.py):

    if any gradient is inf or NaN:  scale *= backoff_factor;  growth_tracker = 0
    else:                           growth_tracker += 1
                                    if growth_tracker == growth_interval:
                                        scale *= growth_factor (only if that stays finite)
                                        growth_tracker = 0

The products are taken in float64 and rounded to the float32 scale, and unscaling multiplies
by ``1 / scale`` computed in float64 and rounded to float32, as torch does.

tracejit's optimizers are pure (``opt.update(grads, state, params)`` returns new ones), so the
scaler is too: the object holds the static configuration, and its state (``scale``, a float32
scalar, and ``growth_tracker``, an int32 scalar) is a dict of arrays passed in and returned.
Every rule is ``np.where`` and arithmetic, never a Python ``if`` on a value, so a whole
training step -- skipped or not -- traces into one jitted function, and runs eagerly on NumPy
with the same results. The PyTorch-style methods (``scale(loss)``, ``unscale_``, ``step``,
``update()``) keep that state on the object for eager loops and call the same functions.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import is_float_dtype
from ..tracer import Tracer, flatten, tree_map, unflatten
from ..tracer.pytree import state_leaves
from ..tracer.trace_state import current_trace


class GradScaler:
    """Dynamic loss scaling, as ``torch.amp.GradScaler`` (its defaults, its update rule).

    Functional, inside one jitted training step (the state is an argument and a result)::

        scaler, opt = GradScaler(), optim.Adam(lr=1e-3)
        scaler_state, opt_state = scaler.init(), opt.init(params)

        @tracejit.jit
        def train_step(params, opt_state, scaler_state, x, y):
            grads = tracejit.grad(
                lambda p: scaler.scale(loss_fn(p, x, y), scaler_state))(params)
            grads, found_inf = scaler.unscale(grads, scaler_state)
            params, opt_state = scaler.step(opt, grads, opt_state, params, found_inf)
            return params, opt_state, scaler.update(scaler_state, found_inf)

    PyTorch-style, for an eager loop (the scaler keeps its state in ``scaler.state``; pass it
    to the function you differentiate, since a traced function must not read it as a
    constant)::

        scaler = GradScaler()
        grad_fn = tracejit.grad(lambda p, x, y, s: scaler.scale(loss_fn(p, x, y), s))
        for x, y in batches:
            grads = grad_fn(params, x, y, scaler.state)
            scaler.unscale_(grads)                 # optional: in place, e.g. to clip them
            params, opt_state = scaler.step(opt, grads, opt_state, params)  # skipped on inf
            scaler.update()

    ``optimizer`` in ``step`` is anything with tracejit's ``update(grads, state, params) ->
    (params, state)`` (``optim.SGD``, ``optim.Adam``) or such a function. With
    ``enabled=False`` scaling and unscaling do nothing and no step is skipped, as in torch.
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _check_config(init_scale, growth_factor, backoff_factor, growth_interval)
        self.init_scale = float(init_scale)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.enabled = bool(enabled)
        self.state = self.init()
        self._found_inf = None      # from unscale_() or step() since the last update()
        self._stage = "ready"       # "ready" -> "unscaled" -> "stepped" -> update() -> "ready"

    # -- the functional core: pure functions over the state --------------------------------------

    def init(self) -> dict:
        """A fresh state: ``{"scale": float32 scalar, "growth_tracker": int32 scalar}``; the
        scale is 1 when disabled (what ``get_scale`` says then, as in torch)."""
        return {"scale": np.asarray(self.init_scale if self.enabled else 1.0, np.float32),
                "growth_tracker": np.asarray(0, np.int32)}

    def scale(self, outputs, state=None):
        """Every array of ``outputs`` (a loss, or a pytree of them) times the scale.

        With ``state``, a pure function; without, the scaler's own state (eager code only).
        The product has NumPy's type, which for a scalar loss is torch's: float16 times the
        float32 scale is float32, so the scaled loss does not overflow float16."""
        if not self.enabled:
            return outputs
        if state is None:
            _refuse_traced("scale(outputs)", outputs,
                           "scale(outputs, state), with the state an argument of the function "
                           "(scaler.state in an eager loop)")
            state = self.state
        s = state["scale"]
        return tree_map(lambda x: x * s, outputs)

    def unscale(self, grads, state):
        """``(grads / scale, found_inf)``: each gradient times ``1 / scale`` (computed as torch
        does: in float64, rounded to float32), and a bool scalar, true when any gradient holds
        an inf or a NaN (checked before unscaling, as torch's kernel does). Pure.

        To combine several calls (several optimizers), ``np.logical_or`` their ``found_inf``."""
        if not self.enabled:
            return grads, np.asarray(False)
        leaves, tree = flatten(grads)
        # a model's state (its buffers: grad gives them zeros, of their dtypes, the int64
        # num_batches_tracked of a BatchNorm too) is no gradient: passed through as it is
        # (a model with BatchNorm was refused: "a gradient has dtype int64")
        frozen = state_leaves(grads)
        found_inf = np.asarray(False)
        unscaled = []
        # A scale of 0 (backed off that far) or a scaled gradient's inf: values, not warnings,
        # as in torch.
        with np.errstate(all="ignore"):
            inv = (1.0 / state["scale"].astype(np.float64)).astype(np.float32)
            for i, g in enumerate(leaves):
                if i in frozen:
                    unscaled.append(g)
                    continue
                dtype = _float_dtype(g)
                found_inf = np.logical_or(found_inf, np.logical_not(np.all(np.isfinite(g))))
                # torch multiplies in float32 at least ("opmath"), then rounds to g's dtype.
                opmath = np.result_type(dtype, np.float32)
                if opmath == dtype:
                    unscaled.append(g * inv.astype(dtype))
                else:
                    unscaled.append((g.astype(opmath) * inv).astype(dtype))
        return unflatten(tree, unscaled), found_inf

    def select(self, found_inf, new, old):
        """``old`` where ``found_inf`` is true, else ``new``: the same pytree structure, leaf
        by leaf (``np.where``), so a skipped step costs no Python branch on a traced value."""
        new_leaves, tree = flatten(new)
        old_leaves = flatten(old)[0]
        if len(new_leaves) != len(old_leaves):
            raise ValueError(f"GradScaler.select: the new tree has {len(new_leaves)} arrays but "
                             f"the old one {len(old_leaves)}; they must have one structure")
        skip = _as_bool(found_inf)
        return unflatten(tree, [np.where(skip, o, n) for n, o in zip(new_leaves, old_leaves)])

    def step(self, optimizer, grads, opt_state, params, found_inf=None):
        """``(params, opt_state)`` after the optimizer's update, or unchanged when a gradient
        was inf/NaN. ``grads`` must be unscaled already.

        With ``found_inf`` (from ``unscale``), a pure function: both outcomes are computed and
        one is selected. Without it, the PyTorch-style step (eager code only): it unscales
        ``grads`` in place unless ``unscale_`` already did, and skips the update when needed."""
        update = getattr(optimizer, "update", optimizer)
        if found_inf is None:
            return self._eager_step(update, grads, opt_state, params)
        if not self.enabled:
            return update(grads, opt_state, params)
        return self.select(found_inf, update(grads, opt_state, params), (params, opt_state))

    def update(self, state=None, found_inf=None, *, new_scale=None):
        """``update(state, found_inf)``: the next state (pure). ``update()`` and
        ``update(new_scale)``: the PyTorch-style call that advances ``self.state``."""
        if not isinstance(state, dict):     # None, or torch's positional new_scale
            if found_inf is not None:
                raise TypeError("GradScaler.update(state, found_inf) needs the state dict "
                                "(from init() or a previous update)")
            self._eager_update(state if state is not None else new_scale)
            return None
        if found_inf is None:
            raise TypeError("GradScaler.update(state, found_inf): found_inf is missing; it is "
                            "the second result of unscale(grads, state)")
        if not self.enabled:
            return state
        return self._next_state(state, _as_bool(found_inf))

    def _next_state(self, state, found_inf):
        """The rule (module docstring), as torch's ``_amp_update_scale_`` computes it."""
        scale, tracker = state["scale"], state["growth_tracker"]
        wide = scale.astype(np.float64)
        with np.errstate(over="ignore"):     # growth to inf is detected below, not a warning
            grown = (wide * self.growth_factor).astype(scale.dtype)
            backed_off = (wide * self.backoff_factor).astype(scale.dtype)
        successful = tracker + 1
        grow = np.logical_and(np.logical_not(found_inf), successful == self.growth_interval)
        kept = np.where(np.logical_and(grow, np.isfinite(grown)), grown, scale)
        reset = np.logical_or(found_inf, grow)
        return {"scale": np.where(found_inf, backed_off, kept),
                "growth_tracker": np.where(reset, np.zeros((), tracker.dtype), successful)}

    # -- PyTorch-style: the state kept on the object (eager code) --------------------------------

    def unscale_(self, grads):
        """Unscale ``grads`` in place (writeable NumPy arrays, as ``grad`` returns them) and
        remember whether any was inf/NaN for ``step`` and ``update``; returns ``grads``.
        Once per iteration and before ``step``, as in torch."""
        if not self.enabled:
            return grads
        _refuse_traced("unscale_(grads)", grads, "grads, found_inf = unscale(grads, state)")
        if self._stage == "unscaled":
            raise RuntimeError("GradScaler.unscale_() has already been called since the last "
                               "update()")
        if self._stage == "stepped":
            raise RuntimeError("GradScaler.unscale_() is being called after step()")
        leaves = flatten(grads)[0]
        for g in leaves:
            if not (isinstance(g, np.ndarray) and g.flags.writeable):
                raise TypeError(f"GradScaler.unscale_ unscales in place, so it needs writeable "
                                f"NumPy arrays, not {type(g).__name__}; use grads, found_inf "
                                f"= scaler.unscale(grads, scaler.state) instead")
        unscaled, found_inf = self.unscale(grads, self.state)
        for g, u in zip(leaves, flatten(unscaled)[0]):
            np.copyto(g, u)
        self._found_inf, self._stage = bool(found_inf), "unscaled"
        return grads

    def _eager_step(self, update, grads, opt_state, params):
        if not self.enabled:
            return update(grads, opt_state, params)
        _refuse_traced("step(optimizer, grads, opt_state, params)", (grads, params),
                       "step(optimizer, grads, opt_state, params, found_inf)")
        if self._stage == "stepped":
            raise RuntimeError("GradScaler.step() has already been called since the last "
                               "update()")
        if self._stage == "ready":
            self.unscale_(grads)
        self._stage = "stepped"
        if self._found_inf:
            return params, opt_state
        return update(grads, opt_state, params)

    def _eager_update(self, new_scale):
        if not self.enabled:
            return
        if new_scale is not None:           # torch: set the scale, keep the growth tracker
            self.state = {"scale": np.asarray(new_scale, np.float32).reshape(()).copy(),
                          "growth_tracker": self.state["growth_tracker"]}
        elif self._found_inf is None:
            raise RuntimeError("GradScaler.update(): no inf checks were recorded; call step() "
                               "(or unscale_()) first")
        else:
            self.state = self._next_state(self.state, np.asarray(self._found_inf))
        self._found_inf, self._stage = None, "ready"

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled, as torch)."""
        return float(self.state["scale"]) if self.enabled else 1.0

    def get_growth_tracker(self) -> int:
        """Consecutive finite steps since the scale last changed (0 when disabled)."""
        return int(self.state["growth_tracker"]) if self.enabled else 0

    def is_enabled(self) -> bool:
        return self.enabled

    def state_dict(self) -> dict:
        """torch's keys and values (``{}`` when disabled), so either library's loads."""
        if not self.enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self.growth_factor,
                "backoff_factor": self.backoff_factor, "growth_interval": self.growth_interval,
                "_growth_tracker": self.get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self.enabled:
            return
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        _check_config(state_dict["scale"], state_dict["growth_factor"],
                      state_dict["backoff_factor"], state_dict["growth_interval"])
        self.init_scale = float(state_dict["scale"])
        self.growth_factor = float(state_dict["growth_factor"])
        self.backoff_factor = float(state_dict["backoff_factor"])
        self.growth_interval = int(state_dict["growth_interval"])
        self.state = {"scale": np.asarray(self.init_scale, np.float32),
                      "growth_tracker": np.asarray(state_dict["_growth_tracker"], np.int32)}


# -- helpers ----------------------------------------------------------------------------------------

def _check_config(init_scale, growth_factor, backoff_factor, growth_interval) -> None:
    """torch checks the two factors (with assertions); the interval and the initial scale are
    checked too, since a bad one silently never grows or scales by nothing."""
    def bad(what, value, why):
        return ValueError(f"GradScaler: {what} (got {value!r}): {why}")
    if not (isinstance(init_scale, (int, float, np.number)) and math.isfinite(init_scale)
            and init_scale > 0):
        raise bad("init_scale must be a finite number > 0", init_scale,
                  "the loss is multiplied by it")
    if not growth_factor > 1.0:
        raise bad("growth_factor must be > 1", growth_factor,
                  "the scale is multiplied by it after growth_interval finite steps")
    if not 0.0 < backoff_factor < 1.0:
        raise bad("backoff_factor must be in (0, 1)", backoff_factor,
                  "the scale is multiplied by it when a gradient is inf or NaN")
    if (isinstance(growth_interval, bool) or not isinstance(growth_interval, (int, np.integer))
            or growth_interval < 1):
        raise bad("growth_interval must be an int >= 1", growth_interval,
                  "it counts the finite steps before the scale grows")


def _float_dtype(g) -> np.dtype:
    """A gradient's dtype; float16 gradients are refused, as torch's unscale_ does."""
    dtype = _dtype(g)
    if dtype == np.float16:
        raise ValueError("GradScaler: attempting to unscale float16 gradients (torch refuses "
                         "them too): keep float32 master weights, so that their gradients are "
                         "float32, and cast to float16 inside the model")
    if not is_float_dtype(dtype):      # (bfloat16's NumPy kind is 'V'; torch unscales it)
        raise TypeError(f"GradScaler: a gradient has dtype {dtype}; gradients are floats")
    return dtype


def _dtype(x) -> np.dtype:
    """The dtype of an array, a Tracer or a Python scalar."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)


def _as_bool(found_inf):
    """found_inf as a bool; torch's form, a float 0.0 / 1.0, is accepted too."""
    if _dtype(found_inf) == np.bool_:
        return found_inf
    return np.not_equal(found_inf, 0)


def _refuse_traced(call: str, tree, instead: str) -> None:
    """The scaler's own state would be a constant of the trace (stale at the next call), and
    its in-place and branching steps cannot be traced: say which pure call to use."""
    if current_trace() is not None or any(isinstance(x, Tracer) for x in flatten(tree)[0]):
        raise TypeError(f"GradScaler.{call} without a state uses the scaler's own state, which "
                        f"only eager code may do. Under jit or grad use {instead}.")
