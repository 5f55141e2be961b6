"""Jacobians and Hessians from the transforms of api.py, as JAX builds them: ``jacrev`` one
``vjp`` pass per output element, ``jacfwd`` one ``jvp`` pass per input element (for small
problems: a pass per row or column), ``hessian`` jacfwd of jacrev."""
from __future__ import annotations

import numpy as np

from ..tracer.errors import call_error
from ..tracer.pytree import flatten, flatten_with_paths, state_leaves, unflatten
from ..tracer.trace_function import _rename
from .api import _arg_names, _callable, _check_float, vjp
from .forward_api import jvp


def _check_float_arg(fn, args, argnum, what):
    """Jacobians need float inputs, as grad does (an integer one gave jacfwd a Jacobian of
    zeros and jacrev an IndexError; JAX refuses it). A model's state (an nn.Module's buffers:
    pytree.state_leaves) gets zero Jacobians instead, as grad gives it zero gradients (the
    int64 num_batches_tracked of a BatchNorm was refused, "cast it to float64", in eval mode
    too); JAX gives an integer leaf float0 zeros. Returns the state leaves' positions."""
    names = _arg_names(fn)
    name = names[argnum] if names and -len(names) <= argnum < len(names) else f"args{argnum}"
    leaves, paths, _ = flatten_with_paths(((args[argnum],), {}))
    state = state_leaves(args[argnum])
    _check_float(leaves, [_rename(p, [name]) for p in paths],
                 [i for i in range(len(leaves)) if i not in state], what)
    return state


def _cotangent_leaves(ct, leaves, state) -> list:
    """The cotangent of each of ``leaves`` from vjp's ``ct`` (which holds None for an integer
    or bool leaf: flatten leaves it out), a model state's left None."""
    got = iter(flatten(ct)[0])
    out = []
    for i, leaf in enumerate(leaves):
        float_leaf = np.issubdtype(np.result_type(leaf), np.inexact) and not isinstance(
            leaf, bool)
        c = next(got) if float_leaf else None
        out.append(None if i in state else c)
    return out


def _with_arg(fn, args, argnum, kwargs=None):
    """fn of args[argnum] alone; the other arguments and the keyword ones (passed through,
    not differentiated, as in JAX) fixed."""
    kwargs = kwargs or {}

    def f(x):
        a = list(args)
        a[argnum] = x
        return fn(*a, **kwargs)
    return f


def jacrev(fn, argnums=0, has_aux=False):
    """The Jacobian of fn's output w.r.t. args[argnums], as JAX's: for an array output and
    an array argument, out.shape + arg.shape. fn may return a pytree of arrays (a dict, a
    tuple) and take a pytree argument (a dict of parameters): the result has the output's
    structure, and each of its leaves the argument's, holding out_leaf.shape + arg_leaf.shape
    (for a tuple of argnums, a tuple of those, one per argument, inside each output leaf).
    One vjp pass per output element, for all the argnums at once. With has_aux, fn returns
    (output, aux) and jacrev (Jacobian, aux), as JAX's (it was refused)."""
    _callable(fn, "jacrev")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def jac(*args, **kwargs):
        states = [_check_float_arg(fn, args, n, "jacrev") for n in nums]
        xs = [args[n] for n in nums]
        out, pull, *aux = vjp(_with_args(fn, args, nums, kwargs), *xs, has_aux=has_aux)
        outs, out_tree = flatten(out)
        for o in outs:
            _array_output("jacrev", o)
        zeros = [np.zeros(np.shape(o), np.dtype(o.dtype)) for o in outs]
        arg_leaves = [flatten(x) for x in xs]        # (leaves, tree) per argnum
        per_out = []
        for o, leaf in enumerate(outs):
            shape = tuple(np.shape(leaf))
            size = int(np.prod(shape))
            rows = []                 # rows[i][a][k]: argnum a's leaf k, by element i of o
            # (an empty output leaf pulls back one zero cotangent, for the rows' dtypes: its
            # Jacobian is empty, shape (0, ...) + x.shape, as JAX's)
            for i in range(max(size, 1)):
                e = np.zeros(size, zeros[o].dtype)
                if size:
                    e[i] = 1
                ct = zeros[:o] + [e.reshape(shape)] + zeros[o + 1:]
                rows.append([_cotangent_leaves(c, leaves, state) for c, (leaves, _), state
                             in zip(pull(unflatten(out_tree, ct)), arg_leaves, states)])
            jacs = tuple(
                unflatten(tree, [np.zeros(shape + np.shape(x_leaf), np.result_type(x_leaf))
                                 if k in states[a] else
                                 np.stack([r[a][k] for r in rows])[:size].reshape(
                                     shape + np.shape(x_leaf))
                                 for k, x_leaf in enumerate(leaves)])
                for a, (leaves, tree) in enumerate(arg_leaves))
            per_out.append(jacs[0] if isinstance(argnums, int) else jacs)
        return (unflatten(out_tree, per_out), *aux) if has_aux else unflatten(out_tree, per_out)
    return jac


def _with_args(fn, args, nums, kwargs):
    """fn of args[n] for n in nums, the other arguments and the keyword ones fixed."""
    def f(*xs):
        a = list(args)
        for n, x in zip(nums, xs):
            a[n] = x
        return fn(*a, **kwargs)
    return f


def jacfwd(fn, argnums=0, has_aux=False):
    """The Jacobian of fn's output w.r.t. args[argnums], as JAX's and with jacrev's
    structure: fn's output pytree, each leaf holding the argument's pytree of
    out_leaf.shape + arg_leaf.shape arrays (a tuple of them, the tuple over argnums
    innermost, for a tuple of argnums). One jvp pass per argument element. With has_aux,
    fn returns (output, aux) and jacfwd (Jacobian, aux), as JAX's (it was refused)."""
    _callable(fn, "jacfwd")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def jac(*args, **kwargs):
        per_num = [_jacfwd_leaves(fn, args, kwargs, n, has_aux) for n in nums]
        out_tree = per_num[0][0]
        jacobian = unflatten(out_tree, [per_num[0][1][o] if isinstance(argnums, int)
                                        else tuple(j[o] for _, j, _ in per_num)
                                        for o in range(len(per_num[0][1]))])
        return (jacobian, per_num[0][2]) if has_aux else jacobian
    return jac


def _jacfwd_leaves(fn, args, kwargs, argnum, has_aux=False):
    """(fn's output tree, for each output leaf the pytree of args[argnum] holding the
    Jacobians of that leaf: out_leaf.shape + arg_leaf.shape, and with ``has_aux`` fn's aux,
    else None)."""
    state = _check_float_arg(fn, args, argnum, "jacfwd")
    x = args[argnum]
    f = _with_arg(fn, args, argnum, kwargs)
    leaves, tree = flatten(x)
    # a Python float argument has no .dtype (jacfwd(f)(2.0), as in JAX)
    kinds = [np.dtype(leaf.dtype) if hasattr(leaf, "dtype") else np.result_type(leaf)
             for leaf in leaves]
    zeros = [np.zeros(np.shape(leaf), kind) for leaf, kind in zip(leaves, kinds)]
    out, out_tree, aux = [], None, None    # out[k][o]: output leaf o by argument leaf k
    # (a model's state: zeros, and no pass, unless no other leaf makes one for the shapes)
    pushed = [k for k in range(len(leaves)) if k not in state] or [0]
    for k, leaf in enumerate(leaves):
        if k not in pushed:
            out.append(None)
            continue
        cols = []
        size = int(np.prod(np.shape(leaf)))
        # (an empty leaf pushes one zero tangent, for the output's tree, shapes and dtypes: its
        # Jacobian is empty, shape out.shape + (0, ...), as JAX's)
        for j in range(max(size, 1)):
            e = np.zeros(size, kinds[k])
            if size:
                e[j] = 1
            tangent = zeros[:k] + [e.reshape(np.shape(leaf))] + zeros[k + 1:]
            _, y, *aux = jvp(f, (x,), (unflatten(tree, tangent),), has_aux=has_aux)
            ys, out_tree = flatten(y)
            for y in ys:
                _array_output("jacfwd", y)
            cols.append(ys)
        out.append([np.stack(col, axis=-1)[..., :size].reshape(tuple(np.shape(col[0]))
                                                   + tuple(np.shape(leaf)))
                    for col in zip(*cols)])
        if k in state:
            out[k] = [np.zeros(np.shape(j), np.result_type(leaf)) for j in out[k]]
    ys = out[pushed[0]] if leaves else []
    for k, leaf in enumerate(leaves):
        if out[k] is None:
            out[k] = [np.zeros(tuple(np.shape(y))[:np.ndim(y) - np.ndim(leaves[pushed[0]])]
                               + tuple(np.shape(leaf)), np.result_type(leaf)) for y in ys]
    return out_tree, [unflatten(tree, [out[k][o] for k in range(len(leaves))])
                      for o in range(len(out[0]))], (aux or [None])[0]


def hessian(fn, argnums=0, has_aux=False):
    """The Hessian of fn's scalar output w.r.t. args[argnums]: jacfwd of jacrev, as JAX's
    (forward over reverse: one Jacobian-vector product per input element of the gradient);
    with has_aux, fn returns (value, aux) and hessian (Hessian, aux)."""
    _callable(fn, "hessian")
    return jacfwd(jacrev(fn, argnums, has_aux), argnums, has_aux)


def _array_output(name: str, out) -> None:
    """A leaf of fn's output must be an array (the pytree around it may be anything)."""
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        raise call_error(f"tracejit: {name} of a function returning {type(out).__name__} "
                         "(an output, or a leaf of an output pytree, that is not an array)",
                         "return arrays, or a pytree (dict, tuple, list) of arrays")
