"""Jacobians and Hessians from the transforms of api.py, as JAX builds them: ``jacrev`` one
``vjp`` pass per output element, ``jacfwd`` one ``jvp`` pass per input element (for small
problems: a pass per row or column), ``hessian`` jacfwd of jacrev."""
from __future__ import annotations

import numpy as np

from ..tracer.errors import call_error
from ..tracer.pytree import flatten, flatten_with_paths, unflatten
from ..tracer.trace_function import _rename
from .api import _arg_names, _callable, _check_float, jvp, vjp


def _check_float_arg(fn, args, argnum, what):
    """Jacobians need float inputs, as grad does (an integer one gave jacfwd a Jacobian of
    zeros and jacrev an IndexError; JAX refuses it)."""
    names = _arg_names(fn)
    name = names[argnum] if names and -len(names) <= argnum < len(names) else f"args{argnum}"
    leaves, paths, _ = flatten_with_paths(((args[argnum],), {}))
    _check_float(leaves, [_rename(p, [name]) for p in paths], range(len(leaves)), what)


def _with_arg(fn, args, argnum, kwargs=None):
    """fn of args[argnum] alone; the other arguments and the keyword ones (passed through,
    not differentiated, as in JAX) fixed."""
    kwargs = kwargs or {}

    def f(x):
        a = list(args)
        a[argnum] = x
        return fn(*a, **kwargs)
    return f


def _each_argnum(transform, fn, argnums):
    """For a tuple of argnums, a tuple of Jacobians, one per argument, as JAX's."""
    jacs = [transform(fn, n) for n in argnums]
    return lambda *args, **kwargs: tuple(j(*args, **kwargs) for j in jacs)


def jacrev(fn, argnums=0):
    """The Jacobian of fn's array output w.r.t. args[argnums]: out.shape + arg.shape, or, for
    an argument that is a pytree of arrays (a dict of parameters), that pytree of Jacobians,
    as JAX's (a tuple of them for a tuple of argnums)."""
    _callable(fn, "jacrev")
    if not isinstance(argnums, int):
        return _each_argnum(jacrev, fn, argnums)

    def jac(*args, **kwargs):
        _check_float_arg(fn, args, argnums, "jacrev")
        x = args[argnums]
        out, pull = vjp(_with_arg(fn, args, argnums, kwargs), x)
        _array_output("jacrev", out)
        shape = tuple(np.shape(out))
        rows = []
        size = int(np.prod(shape))
        # (an empty output pulls back one zero cotangent, for the rows' dtypes: its Jacobian
        # is empty, shape (0, ...) + x.shape, as JAX's)
        for i in range(max(size, 1)):
            e = np.zeros(size, np.dtype(out.dtype))
            if size:
                e[i] = 1
            rows.append(flatten(pull(e.reshape(shape))[0])[0])
        leaves, tree = flatten(x)
        return unflatten(tree, [np.stack([r[k] for r in rows])[:size].reshape(
                                    shape + np.shape(leaf))
                                for k, leaf in enumerate(leaves)])
    return jac


def jacfwd(fn, argnums=0, _pytree_output=False):
    """The Jacobian of fn's array output w.r.t. args[argnums]: out.shape + arg.shape (a pytree
    of them for a pytree argument, a tuple for a tuple of argnums, as jacrev). Under hessian,
    a pytree output (jacrev's for a pytree argument or a tuple of argnums) gives that pytree,
    each leaf the Jacobian of that output leaf, with the tuple over argnums innermost, as
    JAX's (it was refused: hessian of a dict of parameters failed)."""
    _callable(fn, "jacfwd")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def jac(*args, **kwargs):
        per_num = [_jacfwd_leaves(fn, args, kwargs, n, _pytree_output) for n in nums]
        out_tree = per_num[0][0]
        return unflatten(out_tree, [per_num[0][1][o] if isinstance(argnums, int)
                                    else tuple(j[o] for _, j in per_num)
                                    for o in range(len(per_num[0][1]))])
    return jac


def _jacfwd_leaves(fn, args, kwargs, argnum, pytree_output):
    """(fn's output tree, for each output leaf the pytree of args[argnum] holding the
    Jacobians of that leaf: out_leaf.shape + arg_leaf.shape)."""
    _check_float_arg(fn, args, argnum, "jacfwd")
    x = args[argnum]
    f = _with_arg(fn, args, argnum, kwargs)
    leaves, tree = flatten(x)
    # a Python float argument has no .dtype (jacfwd(f)(2.0), as in JAX)
    kinds = [np.dtype(leaf.dtype) if hasattr(leaf, "dtype") else np.result_type(leaf)
             for leaf in leaves]
    zeros = [np.zeros(np.shape(leaf), kind) for leaf, kind in zip(leaves, kinds)]
    out, out_tree = [], None       # out[k][o]: output leaf o by argument leaf k
    for k, leaf in enumerate(leaves):
        cols = []
        size = int(np.prod(np.shape(leaf)))
        # (an empty leaf pushes one zero tangent, for the output's tree, shapes and dtypes: its
        # Jacobian is empty, shape out.shape + (0, ...), as JAX's)
        for j in range(max(size, 1)):
            e = np.zeros(size, kinds[k])
            if size:
                e[j] = 1
            tangent = zeros[:k] + [e.reshape(np.shape(leaf))] + zeros[k + 1:]
            y = jvp(f, (x,), (unflatten(tree, tangent),))[1]
            if not pytree_output:
                _array_output("jacfwd", y)
            ys, out_tree = flatten(y)
            for y in ys:
                _array_output("jacfwd", y)
            cols.append(ys)
        out.append([np.stack(col, axis=-1)[..., :size].reshape(tuple(np.shape(col[0]))
                                                   + tuple(np.shape(leaf)))
                    for col in zip(*cols)])
    return out_tree, [unflatten(tree, [out[k][o] for k in range(len(leaves))])
                      for o in range(len(out[0]))]


def hessian(fn, argnums=0):
    """The Hessian of fn's scalar output w.r.t. args[argnums]: jacfwd of jacrev, as JAX's
    (forward over reverse: one Jacobian-vector product per input element of the gradient)."""
    _callable(fn, "hessian")
    return jacfwd(jacrev(fn, argnums), argnums, _pytree_output=True)


def _array_output(name: str, out) -> None:
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        raise call_error(f"tracejit: {name} of a function returning {type(out).__name__}",
                         "return one array (np.concatenate a tuple of them, or take the "
                         "Jacobian of each output)")
