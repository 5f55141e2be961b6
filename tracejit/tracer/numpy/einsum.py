"""``np.einsum`` for contractions that map onto transpose, reshape, sum and batched matmul.

NumPy's rules kept here: the result has the operands' result_type (sums of int8 stay int8 and
wrap around; a bool sum of products is logical or), size-1 labels and '...' dimensions
broadcast, and its ValueErrors for subscripts that do not fit the operands.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import dtypes
from ..errors import numpy_error, unsupported
from .arithmetic import not_equal
from .lifting import convert, lift_arrays, reshape
from .linalg import diagonal, matmul
from .reductions import any as reduce_any
from .reductions import sum as reduce_sum
from .rules import dt, requested_dtype, result_dtype
from .shapes import transpose


def _parse(subscripts: str, ndims: list[int]):
    """The subscripts of each operand and of the output, with '...' spelled out as letters,
    and the set of those letters."""
    subscripts = subscripts.replace(" ", "")
    ellipsis = set()
    if "." in subscripts:
        expanded = _expand_ellipsis(subscripts, ndims)
        ellipsis = set(expanded) - set(subscripts)
        subscripts = expanded
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
    else:
        lhs = subscripts
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise numpy_error(ValueError, f"einsum: {len(ins)} subscripts for {len(ndims)} "
                          "operands", "give one comma-separated subscript per operand")
    for s, n in zip(ins, ndims):
        if len(s) != n:
            raise numpy_error(ValueError, f"einsum: subscripts {s!r} do not match an operand "
                              f"of {n} dims", "give one letter per dimension, or '...'")
    for c in out:
        if out.count(c) > 1 or c not in lhs:
            raise numpy_error(ValueError, f"einsum: output subscript {c!r} " + (
                "appears more than once" if out.count(c) > 1 else "never appears in an input"),
                "name each output dimension once, with a letter of the inputs")
    return ins, out, ellipsis


def _expand_ellipsis(subscripts: str, ndims: list[int]) -> str:
    """'...ij,...jk->...ik' -> 'ABij,ABjk->ABik': '...' becomes unused letters, right-aligned."""
    lhs, arrow, out = subscripts.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise numpy_error(ValueError, f"einsum: {len(ins)} subscripts for {len(ndims)} "
                          "operands", "give one comma-separated subscript per operand")
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in subscripts]
    widest = max((n - len(s.replace("...", "")) for s, n in zip(ins, ndims) if "..." in s),
                 default=0)
    if arrow and "..." not in out and widest > 0:
        # NumPy refuses rather than summing the '...' dimensions away
        raise numpy_error(ValueError, "einsum: output has more dimensions than subscripts "
                          "given in einstein sum, but no '...' ellipsis provided to broadcast "
                          "the extra dimensions", "write '...' in the output too (e.g. "
                          "'i...->i...'), or sum the result over those dimensions")
    letters = "".join(pool[:widest])
    ins = [s.replace("...", letters[widest - (n - len(s.replace("...", ""))):])
           for s, n in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", letters)
    else:
        rest = "".join(ins).translate({ord(c): None for c in letters})
        out = letters + "".join(sorted(c for c in set(rest) if rest.count(c) == 1))
    return ",".join(ins) + "->" + out


def _broadcast(xs, ins, ellipsis):
    """NumPy broadcasts a size-1 label against its size elsewhere: that operand is constant
    along it, so the axis is dropped from it (the label then comes from the other operands).
    Sizes that differ otherwise are NumPy's ValueError."""
    sizes = {}
    for i, (x, s) in enumerate(zip(xs, ins)):
        for c, n in zip(s, x.shape):
            if n == 1:
                continue
            m, j = sizes.setdefault(c, (n, i))
            if m != n:
                what = "a dimension under '...'" if c in ellipsis else f"label {c!r}"
                raise numpy_error(ValueError, f"einsum: operands could not be broadcast "
                                  f"together: {what} has size {m} in operand {j} (shape "
                                  f"{xs[j].shape}) and {n} in operand {i} (shape {x.shape})",
                                  "a label must have one size in every operand it is in, or "
                                  "size 1 (which broadcasts); check the shapes and subscripts")
    for i, (x, s) in enumerate(zip(xs, ins)):
        keep = [a for a, (c, n) in enumerate(zip(s, x.shape)) if n != 1 or c not in sizes]
        if len(keep) < len(s):
            xs[i] = reshape(x, [x.shape[a] for a in keep])
            ins[i] = "".join(s[a] for a in keep)
    return xs, ins


def _diagonals(x, spec: str, i: int):
    """An operand whose subscripts repeat a letter ("ii->i", "bii->b", "iji->j"): its
    diagonal over those axes, as one axis of that letter (np.diagonal puts it last)."""
    while len(set(spec)) != len(spec):
        c = next(c for c in spec if spec.count(c) > 1)
        p = spec.index(c)
        q = spec.index(c, p + 1)
        if x.shape[p] != x.shape[q]:
            raise numpy_error(ValueError, f"dimensions in operand {i} for collapsing index "
                              f"'{c}' don't match ({x.shape[p]} != {x.shape[q]})",
                              "a repeated label takes a diagonal: give those axes one size")
        x = diagonal(x, 0, p, q)
        spec = "".join(a for k, a in enumerate(spec) if k not in (p, q)) + c
    return x, spec


def _reduce_to(x, spec: str, keep: set[str]):
    """Sum away the letters of spec not in keep, in x's dtype: np.sum would promote int8 and
    bool to int64, where einsum wraps around in int8 and takes logical or of bools."""
    drop = tuple(i for i, c in enumerate(spec) if c not in keep)
    if drop:
        x = reduce_any(x, axis=drop) if dt(x).is_bool else reduce_sum(x, drop, dtype=dt(x))
        spec = "".join(c for c in spec if c in keep)
    return x, spec


def einsum(subscripts, *operands, optimize=False, dtype=None, casting="safe", order="K"):
    if not isinstance(subscripts, str):
        raise unsupported("np.einsum in its interleaved (list) form", "use a subscript string")
    # NumPy converts Python scalars to arrays (int64, float64) and computes in the operands'
    # result_type (or dtype=): the sums too, in one dtype for all
    xs = lift_arrays(*operands)
    target = result_dtype(*xs) if dtype is None else requested_dtype(dtype)
    for i, x in enumerate(xs):
        if dtype is not None and not np.can_cast(dt(x).np, target.np, casting):
            raise numpy_error(TypeError, f"einsum: operand {i} cannot be cast from "
                              f"{dt(x).name} to {target.name} with casting={casting!r}",
                              "pass casting='unsafe', or convert it with .astype first")
    xs = [convert(x, target) for x in xs]
    ins, out, ellipsis = _parse(subscripts, [x.ndim for x in xs])
    for i, s in enumerate(ins):
        xs[i], ins[i] = _diagonals(xs[i], s, i)
    xs, ins = _broadcast(xs, ins, ellipsis)
    x, spec = xs[0], ins[0]
    for i in range(1, len(xs)):
        later = "".join(ins[i + 1:])  # letters later operands still need
        x, spec = _contract(x, spec, xs[i], ins[i], out, later)
    x, spec = _reduce_to(x, spec, set(out))
    return transpose(x, [spec.index(c) for c in out])


def _contract(a, sa, b, sb, out, later):
    keep_after = set(out) | set(later)
    a, sa = _reduce_to(a, sa, set(sb) | keep_after | set(later))
    b, sb = _reduce_to(b, sb, set(sa) | keep_after | set(later))
    batch = [c for c in sa if c in sb and c in keep_after]
    contract = [c for c in sa if c in sb and c not in keep_after]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    dims = {c: n for c, n in zip(sa + sb, a.shape + b.shape)}   # equal: _broadcast checked
    a = transpose(a, [sa.index(c) for c in batch + free_a + contract])
    b = transpose(b, [sb.index(c) for c in batch + contract + free_b])
    nb = [dims[c] for c in batch]
    m = math.prod(dims[c] for c in free_a)
    k = math.prod(dims[c] for c in contract)
    n = math.prod(dims[c] for c in free_b)
    a = reshape(a, nb + [m, k])
    b = reshape(b, nb + [k, n])
    boolean = dt(a).is_bool
    if boolean:
        # a bool sum of products is logical or: count the true products, then compare with 0
        a, b = convert(a, dtypes.int64), convert(b, dtypes.int64)
    y = matmul(a, b)
    if boolean:
        y = not_equal(y, 0)
    y = reshape(y, nb + [dims[c] for c in free_a] + [dims[c] for c in free_b])
    return y, "".join(batch + free_a + free_b)
