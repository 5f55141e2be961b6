"""``np.einsum`` for contractions that map onto transpose, reshape, sum and batched matmul."""
from __future__ import annotations

import math

from ..errors import unsupported
from .lifting import lift_all, reshape
from .linalg import matmul
from .reductions import sum as reduce_sum
from .shapes import transpose


def _parse(subscripts: str, ndims: list[int]):
    subscripts = subscripts.replace(" ", "")
    if "." in subscripts:
        subscripts = _expand_ellipsis(subscripts, ndims)
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
    else:
        lhs = subscripts
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ValueError("einsum: number of subscripts does not match number of operands")
    for s, n in zip(ins, ndims):
        if len(s) != n:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of {n} dims")
    return ins, out


def _expand_ellipsis(subscripts: str, ndims: list[int]) -> str:
    """'...ij,...jk->...ik' -> 'ABij,ABjk->ABik': '...' becomes unused letters, right-aligned."""
    lhs, arrow, out = subscripts.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise ValueError("einsum: number of subscripts does not match number of operands")
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in subscripts]
    widest = max((n - len(s.replace("...", "")) for s, n in zip(ins, ndims) if "..." in s),
                 default=0)
    letters = "".join(pool[:widest])
    ins = [s.replace("...", letters[widest - (n - len(s.replace("...", ""))):])
           for s, n in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", letters)
    else:
        rest = "".join(ins).translate({ord(c): None for c in letters})
        out = letters + "".join(sorted(c for c in set(rest) if rest.count(c) == 1))
    return ",".join(ins) + "->" + out


def _reduce_to(x, spec: str, keep: set[str]):
    """Sum away the letters of spec not in keep (and take diagonals: unsupported)."""
    if len(set(spec)) != len(spec):
        raise unsupported("np.einsum with a repeated index in one operand (a diagonal)")
    drop = [i for i, c in enumerate(spec) if c not in keep]
    if drop:
        x = reduce_sum(x, axis=tuple(drop))
        spec = "".join(c for c in spec if c in keep)
    return x, spec


def einsum(subscripts, *operands, optimize=False, **kw):
    if not isinstance(subscripts, str):
        raise unsupported("np.einsum in its interleaved (list) form", "use a subscript string")
    xs = lift_all(*operands)
    ins, out = _parse(subscripts, [x.ndim for x in xs])
    x, spec = xs[0], ins[0]
    for i in range(1, len(xs)):
        later = "".join(ins[i + 1:])  # letters later operands still need
        x, spec = _contract(x, spec, xs[i], ins[i], out, later)
    x, spec = _reduce_to(x, spec, set(out))
    if len(set(out)) != len(out) or set(out) - set(spec):
        raise ValueError(f"einsum: output subscripts {out!r} are invalid")
    return transpose(x, [spec.index(c) for c in out])


def _contract(a, sa, b, sb, out, later):
    keep_after = set(out) | set(later)
    a, sa = _reduce_to(a, sa, set(sb) | keep_after | set(later))
    b, sb = _reduce_to(b, sb, set(sa) | keep_after | set(later))
    batch = [c for c in sa if c in sb and c in keep_after]
    contract = [c for c in sa if c in sb and c not in keep_after]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    dims = {c: n for c, n in zip(sa, a.shape)}
    for c, n in zip(sb, b.shape):
        if c in dims and dims[c] != n:
            raise ValueError(f"einsum: size of label {c!r} differs: {dims[c]} vs {n}")
        dims[c] = n
    a = transpose(a, [sa.index(c) for c in batch + free_a + contract])
    b = transpose(b, [sb.index(c) for c in batch + contract + free_b])
    nb = [dims[c] for c in batch]
    m = math.prod(dims[c] for c in free_a)
    k = math.prod(dims[c] for c in contract)
    n = math.prod(dims[c] for c in free_b)
    a = reshape(a, nb + [m, k])
    b = reshape(b, nb + [k, n])
    y = matmul(a, b)
    y = reshape(y, nb + [dims[c] for c in free_a] + [dims[c] for c in free_b])
    return y, "".join(batch + free_a + free_b)
