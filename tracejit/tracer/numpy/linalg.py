"""Linear algebra on Tracers: matmul (with NumPy's 1-D and batch rules), dot, tensordot, outer
and their relatives (vdot, inner, vecdot), all lowered to one batched ``matmul`` op between
reshapes and transposes; norms; and the matrix structure functions (diagonal, diag, trace,
triu, tril). np.einsum is in einsum.py.

Kept apart because the contraction rules (which axes meet, where 1-D operands' axes go, NumPy's
shape-mismatch messages) are their own subject.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ...ir import dtypes, ops
from ..errors import numpy_error
from .arithmetic import (absolute, equal, greater_equal, less_equal, multiply, not_equal, power,
                         subtract, where)
from .gather import gather_linear, take
from .lifting import broadcast_to, convert, emit, lift, lift_all, lift_arrays, reshape
from .math_functions import sqrt
from .reductions import amax, amin
from .reductions import any as reduce_any
from .reductions import sum as reduce_sum
from .rules import broadcast_shapes, dt, normalize_axes, normalize_axis, result_dtype
from .shapes import iota, moveaxis, transpose


def matmul(a, b, _name="matmul"):
    a, b = lift_all(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise numpy_error(ValueError, f"matmul: Input operand {0 if a.ndim == 0 else 1} does "
                          f"not have enough dimensions (shapes {a.shape} @ {b.shape})",
                          "multiply by a scalar with * instead")
    target = result_dtype(a, b)
    if target.is_bool:
        # NumPy's bool product is an or of ands: whether the count of true terms is nonzero
        count = matmul(convert(a, dtypes.int64), convert(b, dtypes.int64), _name)
        return not_equal(count, np.int64(0))
    a, b = convert(a, target), convert(b, target)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        what = (f"shapes {a.shape} and {b.shape} not aligned: {a2.shape[-1]} (dim "
                f"{a.ndim - 1}) != {b2.shape[-2]} (dim {builtins.max(b.ndim - 2, 0)})"
                if _name == "dot" else
                f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size "
                f"{b2.shape[-2]} is different from {a2.shape[-1]}): shapes {a.shape} @ "
                f"{b.shape}")
        raise numpy_error(ValueError, what, "the left operand's last dimension must equal the "
                          "right operand's second-to-last (its only one if 1-D); check the "
                          "shapes, or transpose one operand (x.T)")
    if a2.ndim > 2 and b2.ndim == 2:
        # A batch times one matrix is one product of the batch's rows, as tensordot does:
        # one GEMM split over threads, not b copied per batch element for a serial batched
        # product (56 x 84 x 112 @ 112 x 140 float32: 2.7 -> 1.1 ms)
        rows = reshape(a2, (int(np.prod(a2.shape[:-1])), a2.shape[-1]))
        out = emit(a._trace, ops.matmul, [rows, b2], weak=a._weak and b._weak)
        out = reshape(out, a2.shape[:-1] + b2.shape[-1:])
        return reshape(out, out.shape[:-1]) if b.ndim == 1 else out
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = broadcast_to(a2, batch + a2.shape[-2:])
    b2 = broadcast_to(b2, batch + b2.shape[-2:])
    out = emit(a._trace, ops.matmul, [a2, b2], weak=a._weak and b._weak)
    shape = list(out.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-2 if b.ndim != 1 else -1)
    return reshape(out, shape)


def _arrays(a, b):
    """Both operands lifted as np.asarray makes them, as np.dot, np.inner, np.outer, np.vdot
    and np.tensordot convert theirs: a Python number is an int64/float64 array, not a weak
    scalar as in a ufunc (np.dot(float32 array, 2.5) is float64)."""
    return lift_arrays(a, b)


def dot(a, b):
    a, b = _arrays(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, _name="dot")
    # N-d dot: contract a's last axis with b's second-to-last.
    return tensordot(a, b, axes=([a.ndim - 1], [builtins.max(b.ndim - 2, 0)]))


def tensordot(a, b, axes=2):
    a, b = _arrays(a, b)
    if isinstance(axes, (int, np.integer)):
        if not 0 <= axes <= builtins.min(a.ndim, b.ndim):
            raise numpy_error(ValueError, f"tensordot: axes={axes} for shapes {a.shape} and "
                              f"{b.shape}", "axes must be at most the smaller number of "
                              "dimensions")
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if np.isscalar(axes[0]) else list(axes[0]),
                      [axes[1]] if np.isscalar(axes[1]) else list(axes[1]))
        ax_a = [normalize_axis(i, a.ndim) for i in ax_a]
        ax_b = [normalize_axis(i, b.ndim) for i in ax_b]
    if len(ax_a) != len(ax_b) or builtins.any(a.shape[i] != b.shape[j]
                                               for i, j in zip(ax_a, ax_b)):
        raise numpy_error(ValueError, f"shape-mismatch for sum: contracting axes {ax_a} of "
                          f"shape {a.shape} with axes {ax_b} of shape {b.shape}",
                          "the contracted dimensions must have equal sizes")
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = math.prod(a.shape[i] for i in ax_a)
    a2 = reshape(transpose(a, free_a + ax_a), (math.prod(a.shape[i] for i in free_a), k))
    b2 = reshape(transpose(b, ax_b + free_b), (k, math.prod(b.shape[i] for i in free_b)))
    return reshape(matmul(a2, b2), [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


def outer(a, b):
    a, b = _arrays(a, b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def outer_of_vectors(a, b):
    """np.linalg.outer: np.outer of 1-D operands only (np.outer ravels the others)."""
    a, b = _arrays(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise numpy_error(ValueError, "np.linalg.outer: Input arrays must be one-dimensional, "
                          f"but they are x1.ndim={a.ndim} and x2.ndim={b.ndim}",
                          "use np.outer (which ravels them) or broadcasting")
    return outer(a, b)


def vdot(a, b):
    """Sums in the operands' result_type as NumPy's does (int8 wraps around; bool is logical
    or), where np.sum would promote to int64. A Python scalar is an array to it (int64)."""
    a, b = _arrays(a, b)
    if a.size != b.size:
        raise numpy_error(ValueError, f"vdot: vectors have different lengths ({a.size} and "
                          f"{b.size} elements, shapes {a.shape} and {b.shape})",
                          "both operands must have the same number of elements")
    return _sum_of_products(reshape(a, (-1,)), reshape(b, (-1,)), 0)


def inner(a, b):
    """np.inner: a 0-d operand multiplies, as in np.dot."""
    a, b = _arrays(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    return tensordot(a, b, ([-1], [-1]))


def vecdot(a, b, axis=-1):
    """np.vecdot, the gufunc ``(n),(n)->()``: the last axes' sizes must be equal (not
    broadcast), and it sums in the operands' result_type (int8 wraps; bool is an or of ands),
    where np.sum would promote to int64. ``axis`` (np.linalg.vecdot's keyword) is the core
    axis of each operand, counted in its own dims, as the gufunc's ``axis``."""
    a, b = lift_all(a, b)
    for i, x in enumerate((a, b)):
        if x.ndim == 0:
            raise numpy_error(ValueError, f"vecdot: Input operand {i} does not have enough "
                              "dimensions (has 0, gufunc core with signature (n),(n)->() "
                              "requires 1)", "pass arrays of at least one dimension")
    if axis != -1:
        # np.linalg.vecdot(x1, x2, axis=k) passed axis= on (a TypeError here before)
        a, b = moveaxis(a, axis, -1), moveaxis(b, axis, -1)
    if a.shape[-1] != b.shape[-1]:
        raise numpy_error(ValueError, "vecdot: Input operand 1 has a mismatch in its core "
                          "dimension 0, with gufunc signature (n),(n)->() (size "
                          f"{b.shape[-1]} is different from {a.shape[-1]})",
                          "the last axes must have equal sizes")
    return _sum_of_products(a, b, -1)


def _sum_of_products(a, b, axis):
    """sum(a * b) over ``axis`` as NumPy's dot loops compute it: in the operands' result_type
    (an or of ands for bool), except that float16 products are float32 and their sum is
    rounded to float16 once (HALF_dot), not after each product."""
    d = result_dtype(a, b)
    if d.is_bool:
        return reduce_any(multiply(a, b), axis=axis)
    if d.is_float and d.bits < 32:
        wide = multiply(convert(a, dtypes.float32), convert(b, dtypes.float32))
        return convert(reduce_sum(wide, axis=axis), d)
    return reduce_sum(multiply(a, b), axis=axis, dtype=d)


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm, step by step as NumPy's (integers and bools as float64 first, so int8
    squares do not wrap): every vector ord; the matrix ords None, 'fro', 1, -1, inf and -inf.
    The matrix 2, -2 and 'nuc' norms are of the singular values (linalg_decompositions.py)."""
    x = lift(x)
    if not dt(x).is_float:
        x = convert(x, dtypes.float64)
    nd = x.ndim
    if axis is None and (ord is None or (isinstance(ord, str) and ord in ("f", "fro") and
                                         nd == 2) or (ord == 2 and nd == 1)):
        out = sqrt(reduce_sum(multiply(x, x)))
        return reshape(out, (1,) * nd) if keepdims else out
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception:
            raise numpy_error(TypeError, "'axis' must be None, an integer or a tuple of "
                              f"integers (np.linalg.norm got {axis!r})",
                              "pass an int or a tuple") from None
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) != 2:
        raise numpy_error(ValueError, "Improper number of dimensions to norm. (np.linalg.norm "
                          f"over axes {axis})", "a norm is over one axis (a vector norm) or "
                          "two (a matrix norm); np.linalg.vector_norm takes any number")
    row, col = normalize_axis(axis[0], nd), normalize_axis(axis[1], nd)
    if row == col:
        raise numpy_error(ValueError, "Duplicate axes given. (np.linalg.norm)",
                          "name two different axes")
    named = isinstance(ord, str)
    if (named and ord == "nuc") or (not named and ord in (2, -2)):
        from .linalg_decompositions import svd_norm      # (which uses this module's matmul)
        out = svd_norm(x, ord, row, col)
    elif ord is None or (named and ord in ("fro", "f")):
        out = sqrt(reduce_sum(multiply(x, x), (row, col)))
    elif not named and ord in (1, -1, np.inf, -np.inf):
        # 1-norms: the largest (smallest) column sum of |x|; inf-norms: of the row sums
        summed, kept = (row, col) if ord in (1, -1) else (col, row)
        sums = reduce_sum(absolute(x), summed)
        kept -= kept > summed
        out = amax(sums, kept, initial=0) if ord > 0 else amin(sums, kept)
    else:
        raise numpy_error(ValueError, f"Invalid norm order for matrices. (np.linalg.norm(ord="
                          f"{ord!r}) over axes {axis})", "use None, 'fro', 'nuc', 1, -1, 2, "
                          "-2, np.inf or -np.inf")
    if keepdims:
        out = reshape(out, [1 if i in (row, col) else n for i, n in enumerate(x.shape)])
    return out


def _vector_norm(x, ord, axis, keepdims):
    """NumPy's vector norms of a float ``x`` over the one axis in ``axis``."""
    if isinstance(ord, str):
        raise numpy_error(ValueError, f"Invalid norm order '{ord}' for vectors",
                          "'fro' and 'nuc' are matrix norms: give two axes, or use ord=None")
    if ord == np.inf:
        return amax(absolute(x), axis, keepdims, initial=0)
    if ord == -np.inf:
        return amin(absolute(x), axis, keepdims)
    if ord == 0:
        return reduce_sum(convert(not_equal(x, 0), dt(x)), axis, keepdims)
    if ord == 1:
        return reduce_sum(absolute(x), axis, keepdims)
    if ord is None or ord == 2:
        return sqrt(reduce_sum(multiply(x, x), axis, keepdims))
    powered = convert(power(absolute(x), ord), dt(x))           # NumPy: absx **= ord
    out = reduce_sum(powered, axis, keepdims)
    return convert(power(out, np.reciprocal(ord, dtype=dt(out).np)), dt(out))


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """np.linalg.vector_norm: np.linalg.norm over one axis, of ``x`` flattened (``axis``
    None) or with a tuple's axes merged into one, as NumPy computes it."""
    x = lift(x)
    shape = list(x.shape)
    if axis is None:
        y, one = reshape(x, (-1,)), 0
    elif isinstance(axis, tuple):
        axes = [normalize_axis(a, x.ndim) for a in axis]
        rest = [i for i in range(x.ndim) if i not in axes]
        y = reshape(transpose(x, axes + rest), (math.prod(shape[i] for i in axes),)
                    + tuple(shape[i] for i in rest))
        one = 0
    else:
        y, one = x, axis
    out = norm(y, ord, one)
    if keepdims:
        for i in normalize_axes(tuple(range(x.ndim)) if axis is None else axis, x.ndim):
            shape[i] = 1
        out = reshape(out, shape)
    return out


# ---------------------------------------------------------------------------------------------
# Matrix structure


def diagonal(a, offset=0, axis1=0, axis2=1):
    x = lift(a)
    a1, a2 = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    n1, n2 = x.shape[a1], x.shape[a2]
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    rest = [i for i in range(x.ndim) if i not in (a1, a2)]
    x = transpose(x, rest + [a1, a2])
    lead = len(rest)
    return gather_linear(x, [lift(rows, x._trace), lift(rows + offset, x._trace)],
                         [lead, lead + 1])


def diag(v, k=0):
    x = lift(v)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise numpy_error(ValueError, f"np.diag: input must be 1- or 2-d, got shape "
                          f"{x.shape}", "use np.diagonal for more dimensions")
    n = x.shape[0] + abs(k)
    on = equal(subtract(iota((n, n), 1, trace=x._trace), iota((n, n), 0, trace=x._trace)), k)
    # Along the k-th diagonal, v's index is the row (k >= 0) or the column (k < 0).
    vals = take(x, np.minimum(np.arange(n), x.shape[0] - 1), 0)
    vals = reshape(vals, (n, 1) if k >= 0 else (1, n))
    return where(on, broadcast_to(vals, (n, n)), np.zeros((), x.dtype))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return reduce_sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def triangle(upper):
    """np.triu (upper) and np.tril: zeros on the other side of the k-th diagonal."""
    def g(m, k=0):
        x = lift(m)
        if x.ndim == 0:
            raise numpy_error(TypeError, f"np.{'triu' if upper else 'tril'} of a 0-d array",
                              "pass an array of at least 1 dimension")
        if x.ndim == 1:
            # NumPy reads a 1-D array as a row repeated: its triangle is (n, n)
            x = broadcast_to(reshape(x, (1, x.shape[0])), (x.shape[0],) * 2)
        r = iota(x.shape[-2:], 0, trace=x._trace)
        c = iota(x.shape[-2:], 1, trace=x._trace)
        keep = greater_equal(subtract(c, r), k) if upper else less_equal(subtract(c, r), k)
        return where(keep, x, np.zeros((), x.dtype))
    return g


# ---------------------------------------------------------------------------------------------
# Functions of statistics and signal code built on the above: np.cov, np.corrcoef, np.convolve,
# np.cross, np.diagflat


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """np.cross of vectors of 3 (or 2, a zero third) components along the given axes."""
    from .arithmetic import subtract as sub
    from .lifting import constant, stack
    from .shapes import moveaxis
    x, y = lift_all(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = moveaxis(x, axisa, -1), moveaxis(y, axisb, -1)
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise numpy_error(ValueError, "incompatible dimensions for cross product\n"
                          "(dimension must be 2 or 3)", "pass vectors of 2 or 3 components")
    d = result_dtype(x, y)
    xs = [take(x, i, -1) for i in range(x.shape[-1])]
    ys = [take(y, i, -1) for i in range(y.shape[-1])]
    z = constant(np.zeros((), d.np), trace=x._trace)
    if len(xs) == 2 and len(ys) == 2:
        return convert(sub(multiply(xs[0], ys[1]), multiply(xs[1], ys[0])), d)
    x0, x1, x2 = xs + [z] * (3 - len(xs))
    y0, y1, y2 = ys + [z] * (3 - len(ys))
    c = [sub(multiply(x1, y2), multiply(x2, y1)), sub(multiply(x2, y0), multiply(x0, y2)),
         sub(multiply(x0, y1), multiply(x1, y0))]
    shape = broadcast_shapes(x.shape[:-1], y.shape[:-1])
    out = stack([convert(broadcast_to(ci, shape), d) for ci in c], -1)
    return moveaxis(out, -1, axisc)


def diagflat(v, k=0):
    return diag(reshape(lift(v), (-1,)), k)


def kron(a, b):
    """np.kron as NumPy 2 computes it: a's axes interleaved with b's (the shorter shape
    padded with leading 1s), one multiply, reshaped."""
    from .arithmetic import multiply as mul
    x, y = lift_all(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return mul(x, y)
    nd = builtins.max(x.ndim, y.ndim)
    xs = (1,) * (nd - x.ndim) + x.shape
    ys = (1,) * (nd - y.ndim) + y.shape
    xi = reshape(x, tuple(d for n in xs for d in (n, 1)))
    yi = reshape(y, tuple(d for n in ys for d in (1, n)))
    return reshape(mul(xi, yi), tuple(p * q for p, q in zip(xs, ys)))


def vander(x, N=None, increasing=False):
    """np.vander: running products of x (NumPy's multiply.accumulate) after a column of ones,
    in promote_types(x.dtype, int) (float32 gives float64)."""
    from .lifting import concatenate
    from .reductions import cumprod
    from .shapes import flip, full
    v = lift(x)
    if v.ndim != 1:
        raise numpy_error(ValueError, "x must be a one-dimensional array or sequence.",
                          "pass a 1-D array")
    n = v.shape[0]
    N = n if N is None else int(N)
    d = dtypes.as_dtype(np.promote_types(v.dtype, int))
    v = convert(v, d)
    cols = []
    if N > 0:
        cols.append(full((n, 1), np.asarray(1, d.np), trace=v._trace))
    if N > 1:
        cols.append(cumprod(broadcast_to(reshape(v, (n, 1)), (n, N - 1)), axis=1))
    if not cols:
        return full((n, 0), np.asarray(0, d.np), trace=v._trace)
    out = concatenate(cols, 1) if len(cols) > 1 else cols[0]
    return out if increasing else flip(out, 1)


def polyval(p, x):
    """np.polyval by NumPy's Horner loop: y = zeros_like(x), then y * x + p[i] for each
    coefficient (each a 0-d array: NumPy's scalars are not weak)."""
    from .arithmetic import add, multiply as mul
    from .shapes import full
    x = lift(x)
    x = convert(x, dt(x))          # (an array, not a weak Python scalar, as asanyarray makes)
    c = lift(p, x._trace)
    c = convert(c, dt(c))
    if c.ndim != 1:
        c = reshape(c, (-1,)) if c.ndim == 0 else c
    y = full(x.shape, np.asarray(0, x.dtype), trace=x._trace)
    for i in range(c.shape[0]):
        y = add(mul(y, x), take(c, np.int64(i)))
    return y


def triangle_indices_from(upper):
    """np.triu_indices_from, np.tril_indices_from: constant index arrays from the shape."""
    def f(arr, k=0):
        x = lift(arr)
        if x.ndim != 2:
            raise numpy_error(ValueError, "input array must be 2-d", "pass a 2-D array")
        return (np.triu_indices if upper else np.tril_indices)(x.shape[-2], k=k, m=x.shape[-1])
    return f


def multi_dot(arrays, *, out=None):
    """np.linalg.multi_dot: the chain of dots, a 1-D first (last) array a row (column)
    vector, as NumPy's; left to right (NumPy picks the cheapest order: the same product up to
    rounding)."""
    if len(arrays) < 2:
        raise numpy_error(ValueError, "Expecting at least two arrays.", "pass two or more")
    if len(arrays) == 2:
        # NumPy's multi_dot of two arrays is np.dot, of any ndims (no 2-D check)
        return dot(arrays[0], arrays[1])
    xs = lift_all(*arrays)
    first_1d, last_1d = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_1d:
        xs[0] = reshape(xs[0], (1, -1))
    if last_1d:
        xs[-1] = reshape(xs[-1], (-1, 1))
    for x in xs:
        if x.ndim != 2:
            # NumPy's _assert_2d raises LinAlgError, not ValueError
            raise numpy_error(np.linalg.LinAlgError, f"{x.ndim}-dimensional array given. "
                              "Array must be two-dimensional",
                              "pass 2-D arrays (1-D only first or last)")
    out = xs[0]
    for x in xs[1:]:
        out = matmul(out, x)
    if first_1d and last_1d:
        return reshape(out, ())
    if first_1d:
        return reshape(out, (-1,))
    if last_1d:
        return reshape(out, (-1,))
    return out


def matrix_power(a, n):
    """np.linalg.matrix_power: repeated squaring (NumPy's binary decomposition, so the same
    products); n = 0 the identity, n < 0 powers of the inverse."""
    import operator
    a = lift(a)
    n = operator.index(n)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise numpy_error(np.linalg.LinAlgError, "Last 2 dimensions of the array must be "
                          "square", "pass square matrices")
    if n == 0:
        eye = np.eye(a.shape[-1], dtype=a.dtype)
        return broadcast_to(lift(eye, a._trace), a.shape)
    if n < 0:
        from .linalg_solvers import inv
        a, n = inv(a), -n
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result
