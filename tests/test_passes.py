"""The rewriting passes before fusion: simplify, CSE and constant folding; the algebraic
rewrites (ir/passes/algebra.py) and the ones left out because NumPy's result would change."""
from collections import Counter

import numpy as np
import pytest

import tracejit
from hypothesis import given, strategies as st

from tracejit.ir import Builder, TensorType, dtypes, ops, verify
from tracejit.ir.passes import PassLog, cse, dce, fold_constants, optimize, simplify
from tracejit.ir.passes.patterns import without_patterns
from tracejit.ir.passes.cse import same_computation

f32 = np.float32


def test_simplify_removes_identity_converts_and_merges_broadcasts():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    c = b.emit(ops.convert, [x], dtype=dtypes.float32).result
    b1 = b.emit(ops.broadcast_in_dim, [c], shape=(2, 3), dims=(1,)).result
    b2 = b.emit(ops.broadcast_in_dim, [b1], shape=(5, 2, 3), dims=(1, 2)).result
    fn = dce(simplify(b.build([b2])))
    verify(fn)
    assert [op.name for op in fn.ops] == ["broadcast_in_dim"]
    assert fn.ops[0].attrs["dims"] == (2,)
    assert np.array_equal(fn(np.arange(3, dtype=f32))[0],
                          np.broadcast_to(np.arange(3, dtype=f32), (5, 2, 3)))


def test_cse_merges_equal_ops_but_not_side_effects():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    e1 = b.emit(ops.exp, [x]).result
    e2 = b.emit(ops.exp, [x]).result
    b.emit(ops.debug_print, [x], fmt="{}")
    b.emit(ops.debug_print, [x], fmt="{}")
    fn = cse(b.build([b.emit(ops.add, [e1, e2]).result]))
    assert [op.name for op in fn.ops].count("exp") == 1
    assert [op.name for op in fn.ops].count("debug_print") == 2


def test_same_computation_sees_ops_cse_would_merge():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    y = b.param(TensorType(dtypes.float32, (3,)))

    def greater(v, c):
        k = b.emit(ops.constant, [], value=np.float32(c)).result
        kb = b.emit(ops.broadcast_in_dim, [k], shape=(3,), dims=()).result
        return b.emit(ops.gt, [v, kb]).result

    assert same_computation(greater(x, 0), greater(x, 0))      # constants by value
    assert not same_computation(greater(x, 0), greater(x, 1))
    assert not same_computation(greater(x, 0), greater(y, 0))   # parameters by identity
    e = b.emit(ops.exp, [x]).result
    assert not same_computation(greater(e, 0), greater(x, 0))
    assert same_computation(greater(e, 0), greater(b.emit(ops.exp, [x]).result, 0))
    assert not same_computation(greater(e, 0), greater(b.emit(ops.exp, [x]).result, 0),
                                depth=2)                         # looks only so far back


def test_constant_folding_keeps_broadcast_scalars_scalar():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    one = b.emit(ops.constant, [], value=np.float32(1)).result
    two = b.emit(ops.add, [one, one]).result
    bc = b.emit(ops.broadcast_in_dim, [two], shape=(3,), dims=()).result
    fn = fold_constants(b.build([b.emit(ops.mul, [x, bc]).result]))
    consts = [op for op in fn.ops if op.name == "constant"]
    assert any(op.attrs["value"].shape == () and op.attrs["value"] == 2 for op in consts)
    assert "broadcast_in_dim" in [op.name for op in fn.ops]


# -- algebraic rewrites: each exact on NaN, +-inf, -0.0 and integer wraparound ----------------
# A rewrite is checked by running the Function before and after ``optimize`` on the reference
# interpreter (NumPy's own functions) and comparing bits: NaN's payload and sign, zero's sign.
F_EDGES = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.25, 1e-45, 3.4e38],
                   np.float32)


def i_edges(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -1 if info.min else 2, 0, 1, info.max], dtype)


def build(types, body):
    """A Function of params of ``types`` ((dtype, shape) pairs) returning ``body(b, *params)``."""
    b = Builder()
    params = [b.param(TensorType(dtypes.as_dtype(dt), shape)) for dt, shape in types]
    out = body(b, *params)
    return b.build(list(out) if isinstance(out, (list, tuple)) else [out])


def full(b, value, dtype, shape):
    """A constant broadcast to ``shape``, as the tracer writes ``x * 1.0``."""
    k = b.emit(ops.constant, [], value=np.array(value, dtype)).result
    return b.emit(ops.broadcast_in_dim, [k], shape=shape, dims=()).result


def binary(opdef, const, dtype, n, const_first=False):
    def body(b, x):
        k = full(b, const, dtype, (n,))
        return b.emit(opdef, [k, x] if const_first else [x, k]).result
    return build([(dtype, (n,))], body)


def fired_and_optimized(fn):
    log = PassLog()
    out = optimize(fn, log=log)
    verify(out)
    fired = Counter()
    for r in log:
        if r.name == "simplify":
            fired.update(r.details["patterns"])
    return fired, out


def assert_same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a, b)


def assert_exact_rewrite(fn, name, *args, ops_left=None):
    """``name`` fires on ``fn``, and the result is NumPy's, bit for bit, on ``args``."""
    fired, out = fired_and_optimized(fn)
    assert fired[name] >= 1, (name, fired)
    for got, want in zip(out(*args), fn(*args)):
        assert_same_bits(got, want)
    if ops_left is not None:
        assert [op.name for op in out.ops] == ops_left
    return out


@pytest.mark.parametrize("opdef,const,first", [(ops.mul, 1.0, False), (ops.mul, 1.0, True),
                                                (ops.div, 1.0, False)])
def test_times_one_and_divide_by_one_vanish_keeping_nan_inf_and_signed_zero(opdef, const,
                                                                             first):
    fn = binary(opdef, const, np.float32, F_EDGES.size, first)
    name = "mul-one" if opdef is ops.mul else "div-one"
    assert_exact_rewrite(fn, name, F_EDGES, ops_left=[])


@pytest.mark.parametrize("opdef,const,first", [(ops.add, -0.0, False), (ops.add, -0.0, True),
                                                (ops.sub, 0.0, False)])
def test_adding_negative_zero_and_subtracting_zero_vanish_for_floats(opdef, const, first):
    fn = binary(opdef, const, np.float32, F_EDGES.size, first)
    name = "add-zero" if opdef is ops.add else "sub-zero"
    assert_exact_rewrite(fn, name, F_EDGES, ops_left=[])


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("opdef,name", [(ops.add, "add-zero"), (ops.sub, "sub-zero"),
                                        (ops.mul, "mul-one")])
def test_integer_identities_vanish_at_the_wraparound_edges(dtype, opdef, name):
    x = i_edges(dtype)
    fn = binary(opdef, 1 if opdef is ops.mul else 0, dtype, x.size)
    assert_exact_rewrite(fn, name, x, ops_left=[])


@pytest.mark.parametrize("x", [F_EDGES, i_edges(np.int32), i_edges(np.uint16)],
                         ids=["f32", "i32", "u16"])
def test_double_negation_vanishes_for_floats_and_wrapping_integers(x):
    def body(b, v):
        return b.emit(ops.neg, [b.emit(ops.neg, [v]).result]).result
    fn = build([(x.dtype, x.shape)], body)
    assert_exact_rewrite(fn, "double-neg", x, ops_left=[])


def test_where_of_one_value_or_of_a_constant_condition_is_that_value():
    n = F_EDGES.size

    def same(b, c, x):
        return b.emit(ops.where, [c, x, x]).result

    def constant(b, c, x):
        y = b.emit(ops.neg, [x]).result
        return b.emit(ops.where, [full(b, False, np.bool_, (n,)), x, y]).result
    c = np.arange(n) % 2 == 0
    types = [(np.bool_, (n,)), (np.float32, (n,))]
    assert_exact_rewrite(build(types, same), "where-same", c, F_EDGES, ops_left=[])
    assert_exact_rewrite(build(types, constant), "where-constant", c, F_EDGES,
                         ops_left=["neg"])


def convert_chain(src, mid, dst, n):
    def body(b, x):
        y = b.emit(ops.convert, [x], dtype=dtypes.as_dtype(mid)).result
        return b.emit(ops.convert, [y], dtype=dtypes.as_dtype(dst)).result
    return build([(src, (n,))], body)


@pytest.mark.parametrize("x,mid", [(F_EDGES, np.float64), (i_edges(np.int32), np.int64),
                                   (i_edges(np.int32), np.float64),
                                   (i_edges(np.uint8), np.int16), (i_edges(np.int16), np.float32)],
                         ids=["f32-f64", "i32-i64", "i32-f64", "u8-i16", "i16-f32"])
def test_convert_round_trip_through_a_type_holding_every_value_vanishes(x, mid):
    fn = convert_chain(x.dtype, mid, x.dtype, x.size)
    assert_exact_rewrite(fn, "convert-round-trip", x, ops_left=[])


@pytest.mark.parametrize("x,mid,dst", [(i_edges(np.int8), np.int32, np.float32),
                                       (i_edges(np.int8), np.int32, np.int16),
                                       (F_EDGES, np.float64, np.bool_)],
                         ids=["i8-i32-f32", "i8-i32-i16", "f32-f64-bool"])
def test_convert_through_a_type_holding_every_value_becomes_one_convert(x, mid, dst):
    fn = convert_chain(x.dtype, mid, dst, x.size)
    assert_exact_rewrite(fn, "convert-chain", x, ops_left=["convert"])


def test_double_transpose_composes_its_permutations_and_vanishes_as_the_identity():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def twice(perm1, perm2):
        def body(b, v):
            t = b.emit(ops.transpose, [v], perm=perm1).result
            return b.emit(ops.transpose, [t], perm=perm2).result
        return build([(np.float32, x.shape)], body)
    out = assert_exact_rewrite(twice((1, 2, 0), (2, 0, 1)), "transpose-chain", x, ops_left=[])
    out = assert_exact_rewrite(twice((1, 2, 0), (1, 0, 2)), "transpose-chain", x,
                               ops_left=["transpose"])
    assert out.ops[0].attrs["perm"] == (2, 1, 0)


@pytest.mark.parametrize("shape,mid,out,dims", [
    ((5,), (5, 1), (5, 3), (0, 1)),           # softmax's keepdims: reshape, then broadcast
    ((5, 1), (5,), (5, 3), (0,)),             # its gradient: drop the 1, then broadcast
    ((1, 5), (5,), (2, 5, 4), (1,)),          # a size-1 dim placed before the others
    ((1,), (), (3, 2), ()),                   # a scalar's broadcast
])
def test_broadcast_of_a_reshape_adding_or_dropping_ones_is_one_broadcast(shape, mid, out, dims):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

    def body(b, v):
        r = b.emit(ops.reshape, [v], shape=mid).result
        return b.emit(ops.broadcast_in_dim, [r], shape=out, dims=dims).result
    fn = build([(np.float32, shape)], body)
    assert_exact_rewrite(fn, "broadcast-of-reshape", x, ops_left=["broadcast_in_dim"])


@pytest.mark.parametrize("shape,mid,dims,out", [
    ((5,), (5, 3), (0,), (5, 1, 3)),
    ((5, 1), (5, 3), (0, 1), (1, 5, 3)),
    ((1,), (4, 1), (1,), (4,)),
])
def test_reshape_of_a_broadcast_adding_or_dropping_ones_is_one_broadcast(shape, mid, dims, out):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 2

    def body(b, v):
        r = b.emit(ops.broadcast_in_dim, [v], shape=mid, dims=dims).result
        return b.emit(ops.reshape, [r], shape=out).result
    fn = build([(np.float32, shape)], body)
    assert_exact_rewrite(fn, "reshape-of-broadcast", x, ops_left=["broadcast_in_dim"])


def test_a_reshape_that_regroups_dims_does_not_join_a_broadcast():
    def body(b, v):
        r = b.emit(ops.reshape, [v], shape=(2, 3)).result
        return b.emit(ops.broadcast_in_dim, [r], shape=(4, 2, 3), dims=(1, 2)).result
    fired, out = fired_and_optimized(build([(np.float32, (6,))], body))
    assert not fired["broadcast-of-reshape"]
    assert [op.name for op in out.ops] == ["reshape", "broadcast_in_dim"]


def reduce_of_broadcast(opdef, x, shape, dims, axes):
    def body(b, v):
        r = b.emit(ops.broadcast_in_dim, [v], shape=shape, dims=dims).result
        return b.emit(opdef, [r], axes=axes).result
    return build([(x.dtype, x.shape)], body)


@pytest.mark.parametrize("opdef", [ops.reduce_max, ops.reduce_min])
@pytest.mark.parametrize("x", [i_edges(np.int64), i_edges(np.uint8), np.array([True, False])],
                         ids=["i64", "u8", "bool"])
def test_integer_max_and_min_of_a_broadcast_are_the_broadcast(opdef, x):
    fn = reduce_of_broadcast(opdef, x, (3, x.size, 4), (1,), (0, 2))
    assert_exact_rewrite(fn, "reduce-of-broadcast", x, ops_left=[])
    fn = reduce_of_broadcast(opdef, x.reshape(1, -1), (3, x.size), (0, 1), (0,))
    assert_exact_rewrite(fn, "reduce-of-broadcast", x.reshape(1, -1))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint32])
def test_integer_sum_of_a_broadcast_is_a_multiply_that_wraps_as_the_sum_does(dtype):
    x = i_edges(dtype)
    fn = reduce_of_broadcast(ops.reduce_sum, x, (x.size, 300), (0,), (1,))   # 300 wraps in i8
    out = assert_exact_rewrite(fn, "reduce-of-broadcast", x)
    assert "reduce_sum" not in [op.name for op in out.ops]


@pytest.mark.parametrize("opdef,x", [(ops.reduce_max, F_EDGES), (ops.reduce_min, F_EDGES),
                                     (ops.reduce_prod, F_EDGES),
                                     (ops.reduce_sum, i_edges(np.int16))])
def test_reductions_over_size_one_axes_become_reshapes(opdef, x):
    def body(b, v):
        return b.emit(opdef, [v], axes=(0, 2)).result
    v = x.reshape(1, -1, 1)
    fn = build([(x.dtype, v.shape)], body)
    assert_exact_rewrite(fn, "reduce-unit-axes", v, ops_left=["reshape"])


# -- rewrites that are NOT done: each would change a NaN, an inf, a signed zero or a wrap ------
def _sub_self(b, x):
    return b.emit(ops.sub, [x, x]).result


def _sum_unit_axis(b, x):
    r = b.emit(ops.reshape, [x], shape=(x.shape[0], 1)).result
    return b.emit(ops.reduce_sum, [r], axes=(1,)).result


def _sum_broadcast(b, x):
    r = b.emit(ops.broadcast_in_dim, [x], shape=(x.shape[0], 10), dims=(0,)).result
    return b.emit(ops.reduce_sum, [r], axes=(1,)).result


def _max_broadcast(b, x):
    r = b.emit(ops.broadcast_in_dim, [x], shape=(x.shape[0], 10), dims=(0,)).result
    return b.emit(ops.reduce_max, [r], axes=(1,)).result


def _convert_via(mid):
    def body(b, x):
        y = b.emit(ops.convert, [x], dtype=dtypes.as_dtype(mid)).result
        return b.emit(ops.convert, [y], dtype=x.dtype).result
    return body


def _const_op(opdef, const, first=False):
    def body(b, x):
        k = full(b, const, x.dtype.np, x.shape)
        return b.emit(opdef, [k, x] if first else [x, k]).result
    return body


TENTHS = (np.random.default_rng(0).standard_normal(1000) / 10).astype(np.float32)
EXCLUDED = {
    # name: (body, input, what the naive rewrite would give instead)
    "x+0.0 -> x": (_const_op(ops.add, 0.0), F_EDGES, lambda x: x),          # -0.0 -> +0.0
    "0.0+x -> x": (_const_op(ops.add, 0.0, True), F_EDGES, lambda x: x),
    "x-(-0.0) -> x": (_const_op(ops.sub, -0.0), F_EDGES, lambda x: x),
    "x*0 -> 0": (_const_op(ops.mul, 0.0), F_EDGES, np.zeros_like),          # nan, inf, -0.0
    "x-x -> 0": (_sub_self, F_EDGES, np.zeros_like),                        # inf - inf: nan
    "x*-1 -> -x": (_const_op(ops.mul, -1.0), F_EDGES, np.negative),         # nan's sign
    "0.0-x -> -x": (_const_op(ops.sub, 0.0, True), F_EDGES, np.negative),   # 0 - 0 is +0
    "float sum over a size-1 axis -> x": (_sum_unit_axis, F_EDGES, lambda x: x),
    "float sum of a broadcast -> n*x": (_sum_broadcast, TENTHS, lambda x: x * np.float32(10)),
    "float max of a broadcast -> x": (_max_broadcast, np.array([-np.nan, 1], np.float32),
                                      lambda x: x),                      # -nan: +nan
    "i32 -> i8 -> i32 -> x": (_convert_via(np.int8), i_edges(np.int32), lambda x: x),
    "f64 -> f32 -> f64 -> x": (_convert_via(np.float32), np.array([0.1, 1e300, 1e-320]),
                               lambda x: x),
    "i64 -> f64 -> i64 -> x": (_convert_via(np.float64), np.array([2**53 + 1], np.int64),
                               lambda x: x),
}


@pytest.mark.parametrize("name", list(EXCLUDED))
def test_rewrites_that_would_change_numpys_result_are_not_done(name):
    """NumPy's result differs from the naive rewrite's on these inputs, so no pattern fires
    and the optimized Function still computes NumPy's bits."""
    body, x, naive = EXCLUDED[name]
    fn = build([(x.dtype, x.shape)], body)
    (want,) = fn(x)
    assert want.tobytes() != np.asarray(naive(x), want.dtype).tobytes()   # why it is excluded
    fired, out = fired_and_optimized(fn)
    assert not fired, fired
    assert_same_bits(out(x)[0], want)


def test_convert_of_a_float_into_an_integer_through_a_wider_float_stays_two_converts():
    fired, out = fired_and_optimized(convert_chain(np.float32, np.float64, np.int32, 3))
    assert not fired and [op.name for op in out.ops] == ["convert", "convert"]


def test_without_patterns_switches_patterns_off_for_a_while():
    fn = binary(ops.mul, 1.0, np.float32, 3)
    with without_patterns("mul-one"):
        assert not fired_and_optimized(fn)[0]
    assert fired_and_optimized(fn)[0]["mul-one"] == 1
    with pytest.raises(ValueError, match="no patterns named"):
        with without_patterns("no-such-pattern"):
            pass


# -- random chains of the ops these rewrites look at, on constants they look for --------------
SPECIAL = [1.0, -1.0, 0.0, -0.0, 2.0]
STEPS = st.lists(st.tuples(st.sampled_from(["add", "sub", "mul", "div", "neg", "where", "cvt"]),
                           st.sampled_from(SPECIAL), st.booleans(), st.integers(0, 9)),
                 min_size=1, max_size=8)


@given(STEPS)
def test_random_chains_on_identity_constants_keep_numpys_bits(steps):
    """Chains over x (NaN, +-inf, +-0.0, ...) with constants 1, -1, +-0.0, 2 on either side:
    whatever fires, the optimized Function returns the traced one's bits."""
    n = F_EDGES.size

    def body(b, x):
        values = [x]
        for name, const, first, pick in steps:
            v = values[pick % len(values)]
            if name == "neg":
                out = b.emit(ops.neg, [v]).result
            elif name == "where":
                out = b.emit(ops.where, [full(b, first, np.bool_, (n,)), v,
                                         values[(pick + 1) % len(values)]]).result
            elif name == "cvt":
                out = b.emit(ops.convert, [v], dtype=dtypes.float64).result
                out = b.emit(ops.convert, [out], dtype=dtypes.float32).result
            else:
                k = full(b, const, np.float32, (n,))
                out = b.emit(getattr(ops, name), [k, v] if first else [v, k]).result
            values.append(out)
        return values[-1]
    fn = build([(np.float32, (n,))], body)
    out = optimize(fn)
    verify(out)
    with np.errstate(all="ignore"):
        assert_same_bits(out(F_EDGES)[0], fn(F_EDGES)[0])


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_reductions_over_no_axes_give_numpys_results(backend):
    # np.sum adds its identity even over no axes: the sum of -0.0 is +0.0
    x = np.array([-0.0, np.nan, 3.5, -np.inf], np.float32)
    s = np.int8(-7)
    got = tracejit.jit(lambda x, s: (np.sum(x, axis=()), np.max(x, axis=()),
                                     np.prod(x, axis=()), np.sum(s, axis=()),
                                     np.sum(x.reshape(2, 2)) + np.sum(x[0], axis=())),
                       backend=backend, tiered=False)(x, s)
    want = (np.sum(x, axis=()), np.max(x, axis=()), np.prod(x, axis=()), np.sum(s, axis=()),
            np.sum(x.reshape(2, 2)) + np.sum(x[0], axis=()))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
        assert np.array_equal(np.signbit(g), np.signbit(w))
