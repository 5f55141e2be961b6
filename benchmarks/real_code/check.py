"""Running one case: eager NumPy against jit, its gradient against autograd (or central
differences), and its speed. Arguments are pytrees (dicts, lists, tuples of arrays); a case's
results are what it returns plus every argument array after the call, since real code writes
its results into its arguments (NPBench, Adagrad)."""
from __future__ import annotations

import copy
import types

import numpy as np

import tracejit as tj

try:                                     # the reference for gradients, when installed
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.special as asp_special
except ImportError:                      # pragma: no cover - depends on the environment
    autograd = None

FD_EPS = 1e-6
FD_COORDS = 24                           # central differences at this many coordinates per leaf


def leaves(tree):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from leaves(tree[k])
    elif isinstance(tree, (list, tuple)):
        for t in tree:
            yield from leaves(t)
    else:
        yield tree


def _is_float_array(x):
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def _results(result, args_after, array_args):
    """The case's results: returned leaves (None dropped), then the arguments that are arrays."""
    returned = [v for v in leaves(result) if v is not None]
    return returned + [v for v, is_array in zip(leaves(args_after), array_args) if is_array]


def _array_mask(args):
    return [isinstance(x, np.ndarray) for x in leaves(args)]


def outputs(fn, args):
    """fn on deep copies of args: its returned values, then the argument arrays after it."""
    mask = _array_mask(args)
    args = copy.deepcopy(args)
    return [np.asarray(v) for v in _results(fn(*args), args, mask)]


def max_rel_error(got, want) -> tuple[float, str]:
    """max |got - want| / max |want| over result leaves (exact for non-floats); '' or what
    differs in structure."""
    if len(got) != len(want):
        return np.inf, f"{len(got)} results, NumPy {len(want)}"
    err = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            return np.inf, f"result {i}: {g.dtype}{list(g.shape)}, NumPy {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "fc":
            scale = max(np.nanmax(np.abs(w), initial=0.0), 1e-300)
            same_nan = np.array_equal(np.isnan(g), np.isnan(w))
            d = np.abs(np.where(np.isnan(w), 0, g - w))
            err = max(err, np.nanmax(d, initial=0.0) / scale if same_nan else np.inf)
        elif not np.array_equal(g, w):
            err = np.inf
    return float(err), ""


def tolerance(want) -> float:
    return 1e-3 if any(np.asarray(w).dtype == np.float32 for w in want) else 1e-6


# --- gradients -------------------------------------------------------------------------------

def split_args(args):
    """(positions of arguments holding float arrays, the others): the differentiated ones."""
    return [i for i, a in enumerate(args) if any(_is_float_array(x) for x in leaves(a))]


def _to64(tree):
    if isinstance(tree, dict):
        return {k: _to64(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_to64(t) for t in tree)
    return tree.astype(np.float64) if _is_float_array(tree) else tree


def projected_loss(fn, args, np_module=np):
    """A scalar loss of the differentiated arguments: sum(result * w) over the float results
    (returned values and arguments written into), w fixed random weights. Arguments are copied
    first, so that writes into them stay inside the loss (grad forbids writing arguments)."""
    pos = split_args(args)
    mask = _array_mask(args)
    eager = outputs(fn, args)
    rng = np.random.default_rng(7)
    weights = [rng.standard_normal(o.shape) if o.dtype.kind == "f" else None for o in eager]

    def loss(dargs):
        full = list(args)
        for p, a in zip(pos, dargs):
            full[p] = _copied(a, np_module)
        outs = _results(fn(*full), full, mask)
        assert len(outs) == len(eager)
        total = 0.0
        for o, w in zip(outs, weights):
            if w is not None:
                total = total + np_module.sum(o * w)
        return total
    return loss, tuple(args[p] for p in pos)


def _copied(tree, np_module):
    if isinstance(tree, dict):
        return {k: _copied(v, np_module) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_copied(t, np_module) for t in tree)
    return tree.copy() if hasattr(tree, "copy") and not isinstance(tree, float) else tree


def _rebind(fn, np_module, special):
    """fn and the functions of its module with ``np`` (and scipy.special) bound to autograd's
    wrappers, as a user of autograd writes ``import autograd.numpy as np``."""
    g = dict(fn.__globals__)
    g["np"] = np_module
    if "scipy" in g:
        g["scipy"] = types.SimpleNamespace(special=special)
    for k, v in list(g.items()):
        if isinstance(v, types.FunctionType) and v.__module__ == fn.__module__:
            g[k] = types.FunctionType(v.__code__, g, v.__name__, v.__defaults__, v.__closure__)
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def reference_grad(fn, args):
    """(gradient, 'autograd' or 'fd' and why): autograd on fn with np rebound to
    autograd.numpy; where autograd cannot run it (in-place writes, out=, np.add.at), central
    differences of eager NumPy in float64 at FD_COORDS coordinates per leaf (others NaN)."""
    args = _to64(args)
    if autograd is not None:
        try:
            loss, dargs = projected_loss(_rebind(fn, anp, asp_special), args, anp)
            value, grads = autograd.value_and_grad(loss)(dargs)
        except Exception as e:                              # noqa: BLE001
            why = f"fd (autograd: {type(e).__name__})"
        else:       # `x += y` on an autograd box rebinds x instead of writing the argument
            eager_value = projected_loss(fn, args)[0](copy.deepcopy(dargs))
            if np.isclose(value, eager_value, rtol=1e-9, atol=1e-12):
                return grads, "autograd"
            why = "fd (autograd: in-place writes lost)"
    else:
        why = "fd"
    loss, dargs = projected_loss(fn, args)
    rng = np.random.default_rng(3)
    grads = copy.deepcopy(dargs)
    for x, g in zip(leaves(dargs), leaves(grads)):
        if not _is_float_array(x):
            continue
        g[...] = np.nan
        flat, gflat = x.reshape(-1), g.reshape(-1)
        picks = rng.choice(flat.size, min(flat.size, FD_COORDS), replace=False)
        for k in picks:
            old = flat[k]
            flat[k] = old + FD_EPS
            up = float(loss(dargs))
            flat[k] = old - FD_EPS
            down = float(loss(dargs))
            flat[k] = old
            gflat[k] = (up - down) / (2 * FD_EPS)
    return grads, why


def jit_grad(fn, args, backend=None):
    """tracejit's gradient of the projected loss (non-float arguments held as constants)."""
    loss, dargs = projected_loss(fn, _to64(args))
    return tj.jit(tj.grad(loss), backend=backend, tiered=False)(dargs)


def grad_error(got, want) -> float:
    err = 0.0
    for g, w in zip(leaves(got), leaves(want)):
        if not _is_float_array(np.asarray(w)):
            continue
        g, w = np.asarray(g, np.float64), np.asarray(w)
        known = ~np.isnan(w)
        scale = max(np.abs(w[known]).max(initial=0.0), 1e-8)
        diff = np.abs(g[known] - w[known]).max(initial=0.0) / scale
        # NaN where the reference has a number is an error (max() would skip a NaN)
        err = np.inf if np.isnan(diff) else max(err, diff)
    return float(err)
