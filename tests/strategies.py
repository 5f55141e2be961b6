"""Hypothesis strategies for random, valid IR programs and inputs they run on.

Shared by the IR text tests and, for differential testing, by later stages (backends,
autodiff): ``random_programs(...)`` draws ``(Function, inputs)`` where ``Function`` verifies and
``interpret(Function, inputs)`` runs without error.

What it generates (so a differential test knows what to expect):
- params of random dtype/shape (rank <= ``max_rank``, dims in 0..``max_dim``), sometimes named
  (also ``argN``-like names that collide with the printer's fallback names);
- ops drawn from ``GENERATORS`` (every op of ``tracejit.ir.OPS``; ``allow`` restricts them);
  an operand of a needed type is taken from the values so far or made a fresh param;
- constants of every dtype, 0-d to >32 elements (the base64 text form), with nan, +-inf, -0.0
  and int64 extremes when ``special_values``; ``debug_print`` with quotes, '#', ':', unicode;
  ``loc`` strings on ops; ``call`` with a random nested body;
- ``control_flow_programs(...)`` also draws ``cond``, ``scan`` and ``while_loop`` (never drawn
  by ``random_programs`` unless ``allow`` names them), their bodies random elementwise
  programs over their params (``body_ops=MATMUL_BODY_OPS``: with products, and the
  accumulation ``carry + a @ b``); every while_loop is a counted loop of at most 6 steps;
- inputs: ints in [-50, 50], finite floats in [-10, 10] (plus nan/inf/-0.0 when
  ``special_values``), random bools.
Run-time hazards it avoids: take/scatter_add indices are in-range constants; integer power
exponents are constants in 0..3; integer floor_divide/remainder/fmod divisors are constants in
{-5..-2, 1..5} (no division by zero, no INT_MIN // -1). It does NOT avoid float nan/inf or
integer overflow (wraps), or converting non-finite floats to ints (NumPy's value is
platform-defined): exclude ``convert`` with ``allow`` if a backend differs there.
"""
from __future__ import annotations


import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tracejit.ir import OPS, Builder, TensorType, as_dtype, ops

ALL_DTYPES = ("bool", "i32", "i64", "f32", "f64")
_UNARY = sorted(name for name, d in OPS.items()
                if d.category == "elementwise" and d.arity == 1 and not d.attrs)
_BINARY = sorted(name for name, d in OPS.items()
                 if d.category == "elementwise" and d.arity == 2)


def kinds_of(name: str) -> str:
    """Dtype kinds ('b', 'i', 'f') an op takes: its OpDef says (tests/test_ir_ops pins it)."""
    return OPS[name].kinds


def dtypes_of(kinds: str, allowed=ALL_DTYPES):
    return [d for d in allowed if as_dtype(d).kind in kinds]


# -- elements and arrays -------------------------------------------------------------------

_WIDTH = {"float16": 16, "float32": 32}     # hypothesis draws floats exact in the dtype


def elements(dtype, special_values: bool = False):
    dt = as_dtype(dtype)
    if dt.is_bool:
        return st.booleans()
    if dt.is_int:
        s = st.integers(-50, 50)
        if special_values:
            info = np.iinfo(dt.np)
            s = s | st.sampled_from([int(info.min), int(info.max), 0, -1])
        return s
    s = st.floats(-10, 10, width=_WIDTH.get(dt.name, 64))
    if special_values:
        big = 60000.0 if dt.name == "float16" else 2.0**100    # near the dtype's overflow
        s = s | st.sampled_from([np.nan, np.inf, -np.inf, -0.0, big])
    return s


def arrays(t: TensorType, special_values: bool = False):
    return hnp.arrays(t.dtype.np, t.shape, elements=elements(t.dtype, special_values))


def shapes(max_rank=3, max_dim=4, min_rank=0, min_dim=0, unit_dims=False):
    """Shapes; with ``unit_dims`` most dims are 1 or 0 (a batch of one, an empty batch): the
    sizes where a broadcast size-1 dim and a loop index meet."""
    dim = st.integers(min_dim, max_dim)
    if unit_dims:
        dim = st.sampled_from([d for d in (0, 1, 1, 1) if d >= min_dim]) | dim
    return st.lists(dim, min_size=min_rank, max_size=max_rank).map(tuple)


_NAMES = st.sampled_from(["x", "w", "p.w1", "b_2", "arg0", "arg1", "arg2", "inf", "nan", "_"])
_FMT_TEXT = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)),
                    max_size=8) | st.sampled_from(
                        ['say "hi"', "#x: y", "naïve ∑ 😀", "a\\b\n"])
_LOCS = st.none() | st.builds(lambda f, n: f"{f}.py:{n}", st.sampled_from(["m", "a b", "#x"]),
                              st.integers(1, 999)) | st.text(max_size=10)


class _Ctx:
    """A growing program: its Builder, the values so far, and what inputs to draw."""

    def __init__(self, draw, builder, cfg, depth=0):
        self.draw, self.b, self.cfg, self.depth = draw, builder, cfg, depth
        self.pool = []

    def fresh(self, t: TensorType):
        name = self.draw(st.none() | _NAMES)
        v = self.b.param(t, name)
        self.pool.append(v)
        return v

    def operand(self, t: TensorType):
        """A value of type t: one made so far, or a fresh param."""
        same = [v for v in self.pool if v.type == t]
        if same and self.draw(st.booleans()):
            return self.draw(st.sampled_from(same))
        return self.fresh(t)

    def pick(self, kinds="bif", min_rank=0, max_rank=None, nonempty=False):
        """A value of a dtype kind in kinds, rank in [min_rank, max_rank], and (nonempty) a
        dimension > 0: one made so far, or a fresh param."""
        max_rank = self.cfg["max_rank"] if max_rank is None else max_rank
        cands = [v for v in self.pool if v.dtype.kind in kinds
                 and min_rank <= v.type.ndim <= max_rank
                 and (not nonempty or any(d > 0 for d in v.shape))
                 and v.dtype.short in self.cfg["dtypes"]]
        if cands and self.draw(st.integers(0, 4)):
            return self.draw(st.sampled_from(cands))
        dts = dtypes_of(kinds, self.cfg["dtypes"])
        if not dts or min_rank > max(max_rank, int(nonempty)):
            return None
        shape = self.draw(shapes(max(max_rank, min_rank, int(nonempty)), self.cfg["max_dim"],
                                 min_rank=max(min_rank, int(nonempty)), min_dim=int(nonempty),
                                 unit_dims=self.cfg["unit_dims"]))
        return self.fresh(TensorType(as_dtype(self.draw(st.sampled_from(dts))), shape))

    def constant(self, t: TensorType, elems=None):
        if elems is None:
            elems = elements(t.dtype, self.cfg["special"])
        value = self.draw(hnp.arrays(t.dtype.np, t.shape, elements=elems))
        return self.emit(ops.constant, [], value=value)

    def emit(self, opdef, operands, **attrs):
        loc = self.draw(_LOCS) if self.cfg["locs"] else None
        op = self.b.emit(opdef, operands, loc=loc, **attrs)
        self.pool.extend(op.results)
        return op.results[0] if len(op.results) == 1 else None


# -- one generator per op: emits it on suitable operands, or returns None to skip ----------

def _unary(name):
    def gen(c):
        x = c.pick(kinds_of(name))
        return x and c.emit(OPS[name], [x])
    return gen


def _binary(name):
    def gen(c):
        x = c.pick(kinds_of(name))
        if x is None:
            return None
        if x.dtype.is_int and name == "power":
            y = c.constant(x.type, st.integers(0, 3))
        elif x.dtype.is_int and name in ("floor_divide", "remainder", "fmod"):
            y = c.constant(x.type, st.integers(-5, 5).filter(lambda v: v not in (0, -1)))
        else:
            y = c.operand(x.type)
        return c.emit(OPS[name], [x, y])
    return gen


def _where(c):
    x = c.pick()
    return x and c.emit(ops.where, [c.operand(x.type.with_dtype("bool")), x, c.operand(x.type)])


def _convert(c):
    x = c.pick()
    return x and c.emit(ops.convert, [x], dtype=c.draw(st.sampled_from(c.cfg["dtypes"])))


def _constant(c):
    dt = as_dtype(c.draw(st.sampled_from(c.cfg["dtypes"])))
    shape = c.draw(st.sampled_from([(), (3,), (2, 2)]) | shapes(3, 5) | st.just((40,))
                   | st.just((3, 12)))
    return c.constant(TensorType(dt, shape))


def _iota(c):
    shape = c.draw(shapes(3, 4, min_rank=1))
    dt = c.draw(st.sampled_from(dtypes_of("if", c.cfg["dtypes"]) or ["i64"]))
    return c.emit(ops.iota, [], shape=shape, dim=c.draw(st.integers(0, len(shape) - 1)), dtype=dt)


def _broadcast_in_dim(c):
    x = c.pick(max_rank=3)
    if x is None:
        return None
    rank = c.draw(st.integers(x.type.ndim, min(4, x.type.ndim + 2)))
    dims = sorted(c.draw(st.permutations(range(rank)))[:x.type.ndim])
    shape = [c.draw(st.integers(0, 3)) for _ in range(rank)]
    for i, d in enumerate(dims):
        shape[d] = x.shape[i] if x.shape[i] != 1 else c.draw(st.integers(0, 3))
    return c.emit(ops.broadcast_in_dim, [x], shape=shape, dims=dims)


def _reshape(c):
    x = c.pick()
    if x is None:
        return None
    s = list(x.shape)
    options = [[x.type.size], s[::-1], [1] + s, s + [1], [d for d in s if d != 1]]
    if len(s) >= 2:
        options.append(s[:-2] + [s[-2] * s[-1]])
    return c.emit(ops.reshape, [x], shape=c.draw(st.sampled_from(options)))


def _transpose(c):
    x = c.pick()
    return x and c.emit(ops.transpose, [x], perm=c.draw(st.permutations(range(x.type.ndim))))


def _slice(c):
    x = c.pick()
    if x is None:
        return None
    starts, stops, steps = [], [], []
    for n in x.shape:
        a = c.draw(st.integers(0, n))
        starts.append(a)
        stops.append(c.draw(st.integers(a, n)))
        steps.append(c.draw(st.integers(1, 3)))
    return c.emit(ops.slice, [x], starts=starts, stops=stops, steps=steps)


def _window(c):
    x = c.pick(min_rank=1, nonempty=True)
    if x is None:
        return None
    dims = [d for d in range(x.type.ndim) if c.draw(st.booleans())] or [0]
    sizes = [c.draw(st.integers(min(1, x.shape[d]), x.shape[d])) for d in dims]
    return c.emit(ops.window, [x], dims=dims, sizes=sizes)


def _update_slice(c):
    x = c.pick(min_rank=1, nonempty=True)
    if x is None:
        return None
    if 0 in x.shape:            # a box needs a place in every dim
        x = c.fresh(x.type.with_shape([max(n, 1) for n in x.shape]))
    starts, steps, box = [], [], []
    for n in x.shape:
        a, step = c.draw(st.integers(0, n - 1)), c.draw(st.integers(1, 3))
        starts.append(a)
        steps.append(step)
        box.append(c.draw(st.integers(0, (n - 1 - a) // step + 1)))
    return c.emit(ops.update_slice, [x, c.operand(x.type.with_shape(box))], starts=starts,
                  steps=steps)


def _rev(c):
    x = c.pick()
    if x is None:
        return None
    dims = c.draw(st.lists(st.integers(0, max(x.type.ndim - 1, 0)), unique=True,
                           max_size=x.type.ndim)) if x.type.ndim else []
    return c.emit(ops.rev, [x], dims=sorted(dims))


def _pad(c):
    x = c.pick()
    if x is None:
        return None
    n = x.type.ndim
    widths = st.lists(st.integers(0, 2), min_size=n, max_size=n)
    value = c.constant(TensorType(x.dtype, ()))
    return c.emit(ops.pad, [x, value], low=c.draw(widths), high=c.draw(widths),
                  interior=c.draw(widths))


def _concatenate(c):
    x = c.pick(min_rank=1)
    if x is None:
        return None
    axis = c.draw(st.integers(0, x.type.ndim - 1))
    others = []
    for _ in range(c.draw(st.integers(0, 2))):
        shape = list(x.shape)
        shape[axis] = c.draw(st.integers(0, 3))
        others.append(c.operand(x.type.with_shape(shape)))
    return c.emit(ops.concatenate, [x] + others, axis=axis)


def _index_operand(c, kinds="bif"):
    x = c.pick(kinds, nonempty=True)
    if x is None:
        return None, None, None
    axis = c.draw(st.sampled_from([i for i, d in enumerate(x.shape) if d > 0]))
    idx_t = TensorType(as_dtype(c.draw(st.sampled_from(["i32", "i64"]))),
                       c.draw(shapes(2, 3)))
    idx = c.constant(idx_t, st.integers(0, x.shape[axis] - 1))
    return x, idx, axis


def _take(c):
    x, idx, axis = _index_operand(c)
    return x and c.emit(ops.take, [x, idx], axis=axis)


def _scatter(opdef, kinds):
    def gen(c):
        x, idx, axis = _index_operand(c, kinds)
        if x is None:
            return None
        upd_t = x.type.with_shape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])
        return c.emit(opdef, [x, idx, c.operand(upd_t)], axis=axis)
    return gen


def _reduction(name):
    def gen(c):
        nonempty = name in ("reduce_max", "reduce_min")
        x = c.pick("bif" if nonempty else "if")
        if x is None:
            return None
        ok = [i for i, d in enumerate(x.shape) if d > 0 or not nonempty]
        axes = c.draw(st.lists(st.sampled_from(ok), unique=True)) if ok else []
        return c.emit(OPS[name], [x], axes=sorted(axes))
    return gen


def _arg(name):
    def gen(c):
        x = c.pick(nonempty=True)
        if x is None:
            return None
        axis = c.draw(st.sampled_from([i for i, d in enumerate(x.shape) if d > 0]))
        return c.emit(OPS[name], [x], axis=axis)
    return gen


def _cumsum(c):
    x = c.pick(kinds_of("cumsum"), min_rank=1)
    if x is None:
        return None
    return c.emit(ops.cumsum, [x], axis=c.draw(st.integers(0, x.type.ndim - 1)))


def _along_axis(name, **attrs):
    """An op along one axis (cumprod, sort, argsort), its other attributes drawn from lists."""
    def gen(c):
        x = c.pick(kinds_of(name), min_rank=1)
        if x is None:
            return None
        drawn = {k: c.draw(st.sampled_from(v)) for k, v in attrs.items()}
        return c.emit(OPS[name], [x], axis=c.draw(st.integers(0, x.type.ndim - 1)), **drawn)
    return gen


def _linalg_dtype_and_batch(c):
    """A float dtype LAPACK takes (not float16, as NumPy's) and a batch shape, or None."""
    floats = [d for d in dtypes_of("f", c.cfg["dtypes"]) if d != "f16"]
    if not floats:
        return None
    dt = as_dtype(c.draw(st.sampled_from(floats)))
    return dt, c.draw(shapes(max(c.cfg["max_rank"] - 2, 0), c.cfg["max_dim"]))


def _linalg(name):
    """A linear algebra op on a batch of square matrices that LAPACK factors whatever the
    program's inputs: a drawn constant, diagonally dominant (entries in [-1, 1], n + 1 added on
    the diagonal), so solve and cholesky never meet a singular or indefinite matrix (nor
    slogdet a singular one); a solve's right-hand side is any value (nan and inf included:
    LAPACK's pivots come from the matrix alone)."""
    def gen(c):
        drawn = _linalg_dtype_and_batch(c)
        if drawn is None:
            return None
        dt, batch = drawn
        n = c.draw(st.integers(0, c.cfg["max_dim"]))
        entries = st.floats(-1, 1, width=_WIDTH.get(dt.name, 64))
        value = c.draw(hnp.arrays(dt.np, batch + (n, n), elements=entries))
        a = c.emit(ops.constant, [], value=(value + (n + 1) * np.eye(n)).astype(dt.np))
        if name in ("cholesky", "slogdet"):
            return c.emit(OPS[name], [a])
        b = c.operand(TensorType(dt, batch + (n, c.draw(st.integers(0, 3)))))
        attrs = {"lower": c.draw(st.booleans())} if name == "triangular_solve" else {}
        return c.emit(OPS[name], [a, b], **attrs)
    return gen


def _decomposition(name):
    """eigh, svd or qr of a drawn constant (no nan, which svd refuses), its attributes drawn;
    eigh's matrix symmetric with its diagonal 4n apart, so its eigenvalues are apart too
    (Gershgorin) and its eigenvectors well defined."""
    def gen(c):
        drawn = _linalg_dtype_and_batch(c)
        if drawn is None:
            return None
        dt, batch = drawn
        m = c.draw(st.integers(0, c.cfg["max_dim"]))
        n = m if name == "eigh" else c.draw(st.integers(0, c.cfg["max_dim"]))
        entries = st.floats(-1, 1, width=_WIDTH.get(dt.name, 64))
        value = c.draw(hnp.arrays(dt.np, batch + (m, n), elements=entries))
        if name == "eigh":
            value = value + np.swapaxes(value, -1, -2) + np.diag(4.0 * n * np.arange(n))
            attrs = {"lower": c.draw(st.booleans()), "vectors": c.draw(st.booleans())}
        elif name == "svd":
            attrs = {"full_matrices": c.draw(st.booleans()), "compute_uv": c.draw(st.booleans())}
        else:
            attrs = {"mode": c.draw(st.sampled_from(["reduced", "complete", "r"]))}
        a = c.emit(ops.constant, [], value=value.astype(dt.np))
        return c.emit(OPS[name], [a], **attrs)
    return gen


def _matmul(c):
    x = c.pick("if", min_rank=2)
    if x is None:
        return None
    n = c.draw(st.integers(0, 3))
    y = c.operand(x.type.with_shape(x.shape[:-2] + (x.shape[-1], n)))
    return c.emit(ops.matmul, [x, y])


def _matmul_add(c, x=None, among=None):
    """``x + a @ b`` (either order) on a float ``x`` of rank >= 2, ``a`` sometimes transposed
    (``x.T @ y``); ``a`` (then ``b``) a value so far when one fits, as a body's carry or x
    (a product of constants is folded), or one of ``among``: the accumulation a native loop
    updates in place when it is a carry's next value (codegen/loops.py), else BLAS's beta = 1
    (matmul.py)."""
    x = c.pick("f", min_rank=2) if x is None else x
    if x is None:
        return None
    *batch, m, n = x.shape
    batch, r = tuple(batch), len(batch)
    flip = c.draw(st.booleans())
    fits = [v for v in (c.pool if among is None else among) if v.dtype == x.dtype and v.type.ndim == x.type.ndim
            and v.shape[:-2] == batch and v.shape[-1 if flip else -2] == m]
    if fits and c.draw(st.integers(0, 3)):
        a = c.draw(st.sampled_from(fits))
        k = a.shape[-2 if flip else -1]
    else:
        k = c.draw(st.integers(0, 3))
        a = c.operand(x.type.with_shape(batch + ((k, m) if flip else (m, k))))
    if flip:
        a = c.emit(ops.transpose, [a], perm=tuple(range(r)) + (r + 1, r))
    b = c.operand(x.type.with_shape(batch + (k, n)))
    product = c.emit(ops.matmul, [a, b])
    return c.emit(ops.add, [x, product] if c.draw(st.booleans()) else [product, x])


def _debug_print(c):
    xs = [v for v in c.pool if c.draw(st.integers(0, 3)) == 0][:2]
    fmt = c.draw(_FMT_TEXT) + " {}" * len(xs)
    c.emit(ops.debug_print, xs, fmt=fmt)
    return True


def _optimization_barrier(c):
    x = c.pick()
    if x is None:
        return None
    xs = [x] + ([c.pick()] if c.draw(st.booleans()) else [])
    c.emit(ops.optimization_barrier, [v for v in xs if v is not None])
    return True


def _call(c):
    if c.depth >= 1:
        return None
    args = [v for v in (c.pick(), c.pick()) if v is not None][:c.draw(st.integers(1, 2))]
    inner = _Ctx(c.draw, Builder(c.draw(st.sampled_from(["body", "<lambda>", "f.g"]))),
                 c.cfg, c.depth + 1)
    for v in args:
        inner.fresh(v.type)
    _grow(inner, c.draw(st.integers(1, 3)))
    outs = [v for v in inner.pool if c.draw(st.booleans())][:3]
    body = inner.b.build(outs)
    operands = list(args) + [c.operand(p.type) for p in body.params[len(args):]]
    c.emit(ops.call, operands, regions=[body])
    return True


# -- control flow: bodies are regions, grown from their params with ``body_ops`` ------------

CONTROL = ("cond", "scan", "while_loop")
# What bodies are made of by default: elementwise programs (plus a nested cond in loop bodies).
BODY_OPS = tuple(_UNARY) + tuple(_BINARY) + ("where", "convert", "cond")
# Bodies with products: ``matmul`` and the accumulation ``x + a @ b`` (``matmul_add``), among
# few elementwise ops so that they are drawn often.
MATMUL_BODY_OPS = ("add", "mul", "tanh", "neg", "convert", "cond", "matmul", "matmul_add",
                   "optimization_barrier")
# ... and loops nested in loop bodies (one level deep).
NESTED_BODY_OPS = MATMUL_BODY_OPS + ("scan", "while_loop")
_I32 = TensorType(as_dtype("int32"), ())


class _RegionCtx(_Ctx):
    """A body being grown. It closes over nothing, so a value it needs that it has not made
    is a constant, never a new param (its params are the op's operands)."""

    def fresh(self, t: TensorType):
        return self.constant(t)


def _region(c: _Ctx, name: str, types: list) -> _RegionCtx:
    """A body on params of ``types`` with 0..3 ops of ``body_ops``; ``.b.build`` finishes it."""
    r = _RegionCtx(c.draw, Builder(name), dict(c.cfg, allow=c.cfg["body_ops"]), c.depth + 1)
    for t in types:
        r.pool.append(r.b.param(t, c.draw(st.none() | _NAMES)))
    _grow(r, c.draw(st.integers(0, 3)))
    return r


def _cond(c):
    """2..3 branches over 1..2 operands; the index an i32[] param (inputs in [-50, 50], so it
    is clamped most of the time), an earlier value or, in a body, a constant."""
    if c.depth >= 2:
        return None
    operands = [v for v in (c.pick(), c.pick()) if v is not None][:c.draw(st.integers(1, 2))]
    if not operands:
        return None
    index = c.operand(_I32)
    types = [v.type for v in operands]
    first = _region(c, "branch0", types)
    outs = [v for v in first.pool if c.draw(st.booleans())][:2] or [first.pool[-1]]
    branches = [first.b.build(outs)]
    for k in range(1, c.draw(st.integers(2, 3))):
        r = _region(c, f"branch{k}", types)
        branches.append(r.b.build([r.operand(v.type) for v in outs]))
    c.emit(ops.cond, [index] + operands, regions=branches)
    return True


def _scan(c):
    """0..1 consts, 1..2 carries, 0..2 xs (length 0..3), 0..2 ys, forwards or reversed."""
    if c.depth >= 2:      # a loop in a body only when body_ops names it
        return None
    consts = [v for v in [c.pick()] if v is not None and c.draw(st.booleans())]
    carries = [v for v in (c.pick(), c.pick()) if v is not None][:c.draw(st.integers(1, 2))]
    if not carries:
        return None
    xs = [v for v in [c.pick(min_rank=1)] if v is not None and c.draw(st.booleans())]
    length = xs[0].shape[0] if xs else c.draw(st.integers(0, 3))
    if xs and c.draw(st.booleans()):
        dt = as_dtype(c.draw(st.sampled_from(c.cfg["dtypes"])))
        xs.append(c.operand(TensorType(dt, (length,) + c.draw(shapes(1, 3)))))
    slices = [TensorType(x.dtype, x.shape[1:]) for x in xs]
    body = _region(c, "body", [v.type for v in consts + carries] + slices)
    own = body.b.params[len(consts):len(consts) + len(carries)]
    new_carries = [_next_carry(body, p) for p in own]
    ys = [v for v in body.pool if c.draw(st.integers(0, 2)) == 0][:2]
    c.emit(ops.scan, consts + carries + xs, regions=[body.b.build(new_carries + ys)],
           consts=len(consts), carries=len(carries), length=length,
           reverse=c.draw(st.booleans()))
    return True


def _next_carry(body: _RegionCtx, p):
    """A carry's next value: a value of its type; with ``matmul_add`` among the body ops, a
    float matrix carry is often accumulated, ``p + a @ b`` (a native loop's in-place update)."""
    if ("matmul_add" in body.cfg["allow"] and p.dtype.kind == "f" and p.type.ndim >= 2
            and body.draw(st.booleans())):
        return _matmul_add(body, p, [q for q in body.b.params if q is not p] or None)
    return body.operand(p.type)


def _while_loop(c):
    """A counted loop: carry ``i`` (an i32[] constant in -2..2) runs while ``i < bound`` (a
    constant in 0..4 in cond_fn) and the body adds 1 to it, so every loop ends; 0..1 consts
    and 0..1 other carries, updated by random body ops."""
    if c.depth >= 2:      # a loop in a body only when body_ops names it
        return None
    consts = [v for v in [c.pick()] if v is not None and c.draw(st.booleans())]
    start = c.constant(_I32, st.integers(-2, 2))
    others = [v for v in [c.pick()] if v is not None and c.draw(st.booleans())]
    types = [v.type for v in consts + [start] + others]
    k = len(consts)
    test = _region(c, "cond_fn", types)
    bound = test.constant(_I32, st.integers(0, 4))
    keep_going = test.b.emit(ops.lt, [test.b.params[k], bound]).result
    body = _region(c, "body_fn", types)
    step = body.emit(ops.add, [body.b.params[k], body.constant(_I32, st.just(1))])
    new = [step] + [_next_carry(body, p) for p in body.b.params[k + 1:]]
    c.emit(ops.while_loop, consts + [start] + others, consts=k,
           regions=[test.b.build([keep_going]), body.b.build(new)])
    return True


GENERATORS = {name: _unary(name) for name in _UNARY}
GENERATORS.update({name: _binary(name) for name in _BINARY})
GENERATORS.update({
    "where": _where, "convert": _convert, "constant": _constant, "iota": _iota,
    "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape, "transpose": _transpose,
    "slice": _slice, "rev": _rev, "pad": _pad, "concatenate": _concatenate, "take": _take,
    "scatter_add": _scatter(ops.scatter_add, "if"), "scatter": _scatter(ops.scatter, "bif"),
    "update_slice": _update_slice, "window": _window, "argmax": _arg("argmax"),
    "argmin": _arg("argmin"),
    "matmul": _matmul, "cumsum": _cumsum, "cumprod": _along_axis("cumprod"),
    "sort": _along_axis("sort", kind=["quicksort", "heapsort", "stable"]),
    "argsort": _along_axis("argsort", kind=["quicksort", "heapsort", "stable"]),
    "debug_print": _debug_print,
    "optimization_barrier": _optimization_barrier, "call": _call,
})
GENERATORS.update({n: _reduction(n) for n in ("reduce_sum", "reduce_prod", "reduce_max",
                                              "reduce_min")})
GENERATORS.update({n: _linalg(n) for n in ("solve", "triangular_solve", "cholesky", "slogdet")})
GENERATORS.update({n: _decomposition(n) for n in ("eigh", "svd", "qr")})
GENERATORS.update({"cond": _cond, "scan": _scan, "while_loop": _while_loop})


# Patterns of several ops, drawn (by name, in ``allow``/``body_ops``) like one op.
PATTERNS = {"matmul_add": _matmul_add}


def _grow(c: _Ctx, n_ops: int):
    gens = {**GENERATORS, **PATTERNS}
    names = sorted(n for n in gens if n in c.cfg["allow"])
    done = 0
    for _ in range(4 * n_ops):
        if done >= n_ops or not names:
            break
        if gens[c.draw(st.sampled_from(names))](c) is not None:
            done += 1


@st.composite
def random_programs(draw, max_ops: int = 6, dtypes=ALL_DTYPES, allow=None, max_rank: int = 3,
                    max_dim: int = 4, special_values: bool = True, locs: bool = True,
                    unit_dims: bool = False):
    """(Function, inputs): a verified random program and arrays it runs on.

    allow: op names to draw from (default: every op with a generator but the control-flow
    ops, which ``control_flow_programs`` draws); dtypes: the dtypes
    params, constants and converts use (ops may still produce bool or i64, e.g. eq, argmax);
    unit_dims: params' dims are mostly 1 or 0.
    """
    cfg = {"allow": set(GENERATORS) - set(CONTROL) if allow is None else set(allow),
           "dtypes": tuple(dtypes), "max_rank": max_rank, "max_dim": max_dim,
           "special": special_values, "locs": locs, "unit_dims": unit_dims,
           "body_ops": set(BODY_OPS)}
    return _program(draw, cfg, max_ops)


def _program(draw, cfg: dict, max_ops: int, required=()):
    c = _Ctx(draw, Builder(draw(st.sampled_from(["main", "f", "<lambda>", "p.q"]))), cfg)
    c.pick()  # at least one param
    _grow(c, draw(st.integers(1, max_ops)))
    for _ in range(10 if required else 0):
        if any(op.opdef.name in required for op in c.b.ops):
            break
        GENERATORS[draw(st.sampled_from(sorted(required)))](c)
    else:
        assume(not required)
    results = [v for v in c.pool if draw(st.booleans())] or [c.pool[-1]]
    fn = c.b.build(results)
    inputs = [draw(arrays(p.type, cfg["special"])) for p in fn.params]
    return fn, inputs


@st.composite
def control_flow_programs(draw, max_ops: int = 4, dtypes=ALL_DTYPES, allow=None,
                          body_ops=BODY_OPS, max_rank: int = 2, max_dim: int = 3,
                          special_values: bool = True, locs: bool = True):
    """(Function, inputs) like ``random_programs``, each holding at least one ``cond``,
    ``scan`` or ``while_loop`` (see their generators above for what each draws).

    allow: op names outside bodies (default: ``body_ops`` and the control-flow ops);
    body_ops: what bodies are grown from (default ``BODY_OPS``: elementwise ops, and a cond
    nested in a loop body or branch, at most two regions deep). Bodies close over nothing:
    a value a body needs and has not made is a constant inside it.
    """
    cfg = {"allow": set(body_ops) | set(CONTROL) if allow is None else set(allow),
           "dtypes": tuple(dtypes), "max_rank": max_rank, "max_dim": max_dim,
           "special": special_values, "locs": locs, "unit_dims": False,
           "body_ops": set(body_ops)}
    return _program(draw, cfg, max_ops, required=set(CONTROL) & cfg["allow"])
