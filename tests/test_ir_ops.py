"""Per-op tests: each op's type rule and reference implementation against NumPy itself.

The interpreter defines the semantics every backend is tested against, so each op is pinned
here to a NumPy expression written independently of ops.py: values, dtype and shape, across
dtypes, plus the inputs its type rule must reject.
"""
import functools
import math

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tracejit.ir import OPS, Builder, IRTypeError, TensorType, as_dtype, ops, verify

DTYPES = ["bool", "i32", "i64", "f32", "f64"]
COVERED: set[str] = set()


def covers(*names):
    """Marks a test as the test case of these ops (see test_every_op_has_a_test_case)."""
    COVERED.update(names)
    return lambda f: f


def T(dtype, shape=()):
    return TensorType(as_dtype(dtype), tuple(shape))


def run(opdef, arrays, **attrs):
    """Builds a one-op Function on params typed like arrays, verifies it and interprets it."""
    b = Builder(opdef.name)
    params = [b.param(T(as_dtype(a.dtype).short, a.shape), f"x{i}") for i, a in enumerate(arrays)]
    op = b.emit(opdef, params, **attrs)
    fn = verify(b.build(op.results))
    outs = fn(*arrays)
    for r, o in zip(op.results, outs):
        assert o.dtype == r.type.dtype.np and o.shape == r.type.shape
    return outs[0] if len(outs) == 1 else outs


def rule(opdef, types, **attrs):
    b = Builder()
    params = [b.param(t) for t in types]
    return b.emit(opdef, params, **attrs).results


def assert_same(got, want, rtol=0.0):
    """dtype and shape equal; values equal (NaN == NaN), within rtol for floats if given."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f" and rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)
    else:
        assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (got, want)


@functools.lru_cache(maxsize=None)
def elements(dtype, special=True):
    dt = as_dtype(dtype)
    if dt.is_bool:
        return st.booleans()
    if dt.is_int:
        return st.integers(int(np.iinfo(dt.np).min), int(np.iinfo(dt.np).max))
    return st.floats(width=32 if dt.short == "f32" else 64, allow_nan=special,
                     allow_infinity=special)


small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@functools.lru_cache(maxsize=None)
def arrays(dtype, shape=small_shapes, elems=None):
    elems = elements(dtype) if elems is None else elems
    return hnp.arrays(as_dtype(dtype).np, shape, elements=elems)


def test_every_op_has_a_test_case():
    """A new op in the registry must get a test here."""
    assert sorted(set(OPS) - COVERED) == []


# -- elementwise unary -----------------------------------------------------------------------

def _digamma(x):
    """SciPy's digamma, negative x by the reflection psi(1 - x) - pi / tan(pi r) with r the
    exact distance to the nearest integer (SciPy's own reflection loses digits next to a pole;
    ops.digamma and the kernels reflect this way)."""
    d = x.astype(np.float64)
    r = d - np.rint(d)
    reflect = (d < 0) & (r != 0) & np.isfinite(d)
    out = np.where(reflect, scipy.special.digamma(np.where(reflect, 1 - d, 0.5))
                   - np.pi / np.tan(np.pi * r), scipy.special.digamma(d))
    return out.astype(x.dtype)


def _erf(x):
    return np.array([math.erf(v) for v in x.reshape(-1).tolist()], x.dtype).reshape(x.shape)


# name -> (NumPy expression, dtypes it takes, rtol for floats)
UNARY = {
    "neg": (lambda x: -x, "i32 i64 f32 f64", 0), "abs": (np.absolute, "i32 i64 f32 f64", 0),
    "sign": (np.sign, "i32 i64 f32 f64", 0), "exp": (np.exp, "f32 f64", 0),
    "expm1": (np.expm1, "f32 f64", 0), "log": (np.log, "f32 f64", 0),
    "log1p": (np.log1p, "f32 f64", 0), "sqrt": (np.sqrt, "f32 f64", 0),
    "sin": (np.sin, "f32 f64", 0), "cos": (np.cos, "f32 f64", 0), "tan": (np.tan, "f32 f64", 0),
    "tanh": (np.tanh, "f32 f64", 0), "sinh": (np.sinh, "f32 f64", 0),
    "cosh": (np.cosh, "f32 f64", 0), "arcsin": (np.arcsin, "f32 f64", 0),
    "arccos": (np.arccos, "f32 f64", 0), "arctan": (np.arctan, "f32 f64", 0),
    "arcsinh": (np.arcsinh, "f32 f64", 0), "arctanh": (np.arctanh, "f32 f64", 0),
    "erf": (_erf, "f32 f64", 1e-6),
    "logistic": (lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), "f32 f64", 1e-6),
    "floor": (np.floor, "f32 f64", 0), "ceil": (np.ceil, "f32 f64", 0),
    "round": (np.round, "f32 f64", 0), "logical_not": (np.logical_not, "bool", 0),
    "isnan": (np.isnan, "f32 f64", 0), "isinf": (np.isinf, "f32 f64", 0),
    "isfinite": (np.isfinite, "f32 f64", 0),
    "gammaln": (scipy.special.gammaln, "f32 f64", 0),
    "digamma": (_digamma, "f32 f64", 0),
    "relu": (lambda x: np.where(x <= 0, np.zeros((), x.dtype), x), "i32 i64 f32 f64", 0),
}
COVERED.update(UNARY)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds, _) in UNARY.items()
                                        for d in ds.split()])
@settings(max_examples=10)
@given(data=st.data())
def test_unary_matches_numpy(name, dtype, data):
    fn, _, rtol = UNARY[name]
    x = data.draw(arrays(dtype))
    with np.errstate(all="ignore"):
        want = np.asarray(fn(x))
    want = want.astype(x.dtype) if want.dtype != np.bool_ else want
    assert_same(run(OPS[name], [x]), want, rtol)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds, _) in UNARY.items()
                                        for d in DTYPES if d not in ds.split()])
def test_unary_rejects_dtypes(name, dtype):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T(dtype, (2,))])


def test_round_is_half_to_even_like_numpy():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float64)
    assert run(ops.round, [x]).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]


def test_logistic_saturates_without_nan():
    x = np.array([-1000.0, 1000.0, np.inf, -np.inf], np.float32)
    assert run(ops.logistic, [x]).tolist() == [0.0, 1.0, 1.0, 0.0]


# -- elementwise binary ----------------------------------------------------------------------

CMP = "bool i32 i64 f32 f64"
BINARY = {
    "add": (np.add, "i32 i64 f32 f64"), "sub": (np.subtract, "i32 i64 f32 f64"),
    "mul": (np.multiply, "i32 i64 f32 f64"), "div": (np.divide, "f32 f64"),
    "floor_divide": (np.floor_divide, "i32 i64 f32 f64"),
    "remainder": (np.remainder, "i32 i64 f32 f64"), "power": (np.power, "i32 i64 f32 f64"),
    "maximum": (np.maximum, "i32 i64 f32 f64"), "minimum": (np.minimum, "i32 i64 f32 f64"),
    "arctan2": (np.arctan2, "f32 f64"), "hypot": (np.hypot, "f32 f64"),
    "copysign": (np.copysign, "f32 f64"), "logaddexp": (np.logaddexp, "f32 f64"),
    "fmod": (np.fmod, "i32 i64 f32 f64"),
    "eq": (np.equal, CMP), "ne": (np.not_equal, CMP), "lt": (np.less, CMP),
    "le": (np.less_equal, CMP), "gt": (np.greater, CMP), "ge": (np.greater_equal, CMP),
    "logical_and": (np.logical_and, "bool"), "logical_or": (np.logical_or, "bool"),
    "logical_xor": (np.logical_xor, "bool"), "bitwise_and": (np.bitwise_and, "bool i32 i64"),
    "bitwise_or": (np.bitwise_or, "bool i32 i64"),
    "bitwise_xor": (np.bitwise_xor, "bool i32 i64"),
}
COVERED.update(BINARY)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds) in BINARY.items()
                                        for d in ds.split()])
@settings(max_examples=10)
@given(data=st.data())
def test_binary_matches_numpy(name, dtype, data):
    """Integer power is drawn with exponents >= 0 (NumPy raises on negative ones)."""
    fn, _ = BINARY[name]
    shape = data.draw(small_shapes)
    x = data.draw(arrays(dtype, shape))
    y_elems = st.integers(0, 40) if name == "power" and dtype[0] == "i" else None
    y = data.draw(arrays(dtype, shape, y_elems))
    with np.errstate(all="ignore"):
        want = np.asarray(fn(x, y))
    assert_same(run(OPS[name], [x, y]), want)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds) in BINARY.items()
                                        for d in DTYPES if d not in ds.split()])
def test_binary_rejects_dtypes(name, dtype):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T(dtype, (2,)), T(dtype, (2,))])


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("a,b", [(((2,), "f32"), ((2,), "f64")),       # dtypes differ
                                 (((2,), "i32"), ((3,), "i32")),       # shapes differ
                                 (((2, 1), "f32"), ((2, 3), "f32")),   # no implicit broadcast
                                 (((), "bool"), ((1,), "bool"))])
def test_binary_rejects_mismatched_operands(name, a, b):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T(a[1], a[0]), T(b[1], b[0])])


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_floor_divide_and_remainder_with_negatives_match_numpy(dtype):
    x = np.array([-7, 7, -7, 7, 0, -1], as_dtype(dtype).np)
    y = np.array([2, -2, -2, 2, 3, 5], as_dtype(dtype).np)
    assert run(ops.floor_divide, [x, y]).tolist() == [-4, -4, 3, 3, 0, -1]
    assert run(ops.remainder, [x, y]).tolist() == [1, -1, -1, 1, 0, 4]


def test_float_remainder_takes_the_divisors_sign():
    x = np.array([-7.5, 7.5, -0.0], np.float64)
    y = np.array([2.0, -2.0, 3.0], np.float64)
    assert_same(run(ops.remainder, [x, y]), np.remainder(x, y))
    assert run(ops.remainder, [x, y]).tolist()[:2] == [0.5, -0.5]


@pytest.mark.parametrize("dtype", ["i32", "i64"])
def test_integer_division_by_zero_gives_zero_like_numpy(dtype):
    x = np.array([5, -5, 0], as_dtype(dtype).np)
    zero = np.zeros(3, as_dtype(dtype).np)
    assert run(ops.floor_divide, [x, zero]).tolist() == [0, 0, 0]
    assert run(ops.remainder, [x, zero]).tolist() == [0, 0, 0]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_float_division_by_zero_gives_inf_and_nan(dtype):
    x = np.array([1.0, -1.0, 0.0], as_dtype(dtype).np)
    zero = np.zeros(3, as_dtype(dtype).np)
    out = run(ops.div, [x, zero])
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])
    with np.errstate(all="ignore"):
        want = np.floor_divide(x, zero)
    assert_same(run(ops.floor_divide, [x, zero]), want)


def test_integer_power_matches_numpy_including_zero_to_the_zero():
    x = np.array([0, 2, -3, 7], np.int64)
    y = np.array([0, 10, 3, 0], np.int64)
    assert run(ops.power, [x, y]).tolist() == [1, 1024, -27, 1]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_maximum_and_minimum_propagate_nan(dtype):
    x = np.array([np.nan, 1.0, np.nan], as_dtype(dtype).np)
    y = np.array([1.0, np.nan, np.nan], as_dtype(dtype).np)
    assert np.isnan(run(ops.maximum, [x, y])).all()
    assert np.isnan(run(ops.minimum, [x, y])).all()


def test_integer_add_wraps_like_numpy():
    x = np.array([np.iinfo(np.int32).max], np.int32)
    assert run(ops.add, [x, np.ones(1, np.int32)]).tolist() == [np.iinfo(np.int32).min]


# -- where, convert --------------------------------------------------------------------------

@covers("where")
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=10)
@given(data=st.data())
def test_where_matches_numpy(dtype, data):
    shape = data.draw(small_shapes)
    c, x, y = data.draw(arrays("bool", shape)), data.draw(arrays(dtype, shape)), \
        data.draw(arrays(dtype, shape))
    assert_same(run(ops.where, [c, x, y]), np.where(c, x, y))


@pytest.mark.parametrize("types", [
    [T("i32", (2,)), T("f32", (2,)), T("f32", (2,))],     # condition not bool
    [T("bool", (3,)), T("f32", (2,)), T("f32", (2,))],    # condition shape
    [T("bool", (2,)), T("f32", (2,)), T("f64", (2,))],    # branch dtypes
    [T("bool", (2,)), T("f32", (2,)), T("f32", (1,))],    # branch shapes
])
def test_where_rejects(types):
    with pytest.raises(IRTypeError):
        rule(ops.where, types)


@covers("convert")
@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
@settings(max_examples=10)
@given(data=st.data())
def test_convert_matches_astype(src, dst, data):
    """Finite, in-range values only: NumPy's float->int of nan/inf/out-of-range is undefined."""
    elems = st.integers(-1000, 1000) if src[0] == "i" else (
        st.floats(-1000, 1000, width=32 if src == "f32" else 64) if src[0] == "f" else None)
    x = data.draw(arrays(src, elems=elems))
    assert_same(run(ops.convert, [x], dtype=dst), x.astype(as_dtype(dst).np))


def test_convert_float_to_bool_treats_nan_as_true():
    x = np.array([0.0, -0.0, np.nan, 2.0], np.float32)
    assert run(ops.convert, [x], dtype="bool").tolist() == [False, False, True, True]


def test_convert_rejects_unknown_dtype():
    with pytest.raises(TypeError):
        rule(ops.convert, [T("f32", (2,))], dtype="complex64")


# -- sources ---------------------------------------------------------------------------------

@covers("constant")
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=10)
@given(data=st.data())
def test_constant_gives_its_value(dtype, data):
    value = data.draw(arrays(dtype))
    b = Builder()
    c = b.emit(ops.constant, [], value=value).result
    assert c.type == T(dtype, value.shape)
    fn = verify(b.build([c]))
    (out,) = fn()
    assert_same(out, value)


def test_constant_result_does_not_alias_the_attribute():
    b = Builder()
    c = b.emit(ops.constant, [], value=np.arange(3)).result
    fn = b.build([c])
    fn()[0][:] = 99
    assert fn()[0].tolist() == [0, 1, 2]


def test_constant_rejects_unsupported_dtype():
    with pytest.raises(TypeError):
        rule(ops.constant, [], value=np.zeros(2, np.complex64))


@covers("iota")
@pytest.mark.parametrize("dtype", ["i32", "i64", "f32", "f64"])
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), data=st.data())
def test_iota_counts_along_dim(dtype, shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    want = np.indices(shape)[dim].astype(as_dtype(dtype).np) if 0 not in shape else \
        np.zeros(shape, as_dtype(dtype).np)
    assert_same(run(ops.iota, [], shape=shape, dim=dim, dtype=dtype), want)


@pytest.mark.parametrize("attrs", [dict(shape=[3], dim=1, dtype="i32"),
                                   dict(shape=[], dim=0, dtype="i32"),
                                   dict(shape=[3], dim=0, dtype="bool"),
                                   dict(shape=[-3], dim=0, dtype="i32")])
def test_iota_rejects(attrs):
    with pytest.raises(IRTypeError):
        rule(ops.iota, [], **attrs)


# -- layout ----------------------------------------------------------------------------------

@covers("broadcast_in_dim")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_broadcast_in_dim_matches_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    dims = sorted(data.draw(st.permutations(range(len(shape))))[
        :data.draw(st.integers(0, len(shape)))])
    src = tuple(data.draw(st.sampled_from([shape[d], 1])) for d in dims)
    x = data.draw(arrays(dtype, src))
    view = [1] * len(shape)
    for i, d in enumerate(dims):
        view[d] = src[i]
    assert_same(run(ops.broadcast_in_dim, [x], shape=shape, dims=dims),
                np.broadcast_to(x.reshape(view), shape))


@pytest.mark.parametrize("src,shape,dims", [
    ((3,), (4,), (0,)),           # size differs and is not 1
    ((3,), (3, 3), ()),           # too few dims
    ((2, 3), (3, 2), (1, 0)),     # dims not increasing
    ((3,), (3,), (1,)),           # dim out of range
    ((1,), (-2,), (0,)),          # negative target dimension
    ((2, 2), (2, 2), (0, 0)),     # repeated dim
])
def test_broadcast_in_dim_rejects(src, shape, dims):
    with pytest.raises(IRTypeError):
        rule(ops.broadcast_in_dim, [T("f32", src)], shape=shape, dims=dims)


@covers("reshape")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_reshape_matches_numpy(dtype, data):
    x = data.draw(arrays(dtype))
    shape = data.draw(st.sampled_from([(x.size,), (1, x.size), x.shape[::-1], x.shape + (1,)]))
    assert_same(run(ops.reshape, [x], shape=shape), x.reshape(shape))


@pytest.mark.parametrize("shape", [(5,), (2, 2), (-2, -3), (7, 0)])
def test_reshape_rejects_other_sizes_and_negative_dims(shape):
    with pytest.raises(IRTypeError):
        rule(ops.reshape, [T("f32", (2, 3))], shape=shape)


@covers("transpose")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_transpose_matches_numpy(dtype, data):
    x = data.draw(arrays(dtype))
    perm = data.draw(st.permutations(range(x.ndim)))
    assert_same(run(ops.transpose, [x], perm=perm), np.transpose(x, perm))


@pytest.mark.parametrize("perm", [(0,), (0, 0), (0, 2), (1, 0, 2)])
def test_transpose_rejects_non_permutations(perm):
    with pytest.raises(IRTypeError):
        rule(ops.transpose, [T("f32", (2, 3))], perm=perm)


@covers("slice")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_slice_matches_numpy(dtype, data):
    x = data.draw(arrays(dtype))
    starts = [data.draw(st.integers(0, n)) for n in x.shape]
    stops = [data.draw(st.integers(a, n)) for a, n in zip(starts, x.shape)]
    steps = [data.draw(st.integers(1, 4)) for _ in x.shape]
    want = x[tuple(slice(a, b, s) for a, b, s in zip(starts, stops, steps))]
    assert_same(run(ops.slice, [x], starts=starts, stops=stops, steps=steps), want)


@pytest.mark.parametrize("starts,stops,steps", [
    ((0,), (5,), (1,)),      # stop past the end
    ((4,), (4,), (1,)),      # start past the end
    ((3,), (1,), (1,)),      # stop before start
    ((-1,), (2,), (1,)),     # negative start
    ((0,), (4,), (0,)),      # zero step
    ((0,), (4,), (-1,)),     # negative step
    ((0, 0), (1, 1), (1, 1)),  # one entry per dimension
])
def test_slice_rejects_bad_bounds(starts, stops, steps):
    with pytest.raises(IRTypeError):
        rule(ops.slice, [T("f32", (3,))], starts=starts, stops=stops, steps=steps)


@covers("rev")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_rev_matches_flip(dtype, data):
    x = data.draw(arrays(dtype))
    dims = sorted(data.draw(st.sets(st.integers(0, x.ndim - 1)))) if x.ndim else []
    assert_same(run(ops.rev, [x], dims=dims), np.flip(x, dims) if dims else x)


@pytest.mark.parametrize("dims", [(2,), (-1,), (0, 0)])
def test_rev_rejects_bad_and_repeated_dims(dims):
    with pytest.raises(IRTypeError):
        rule(ops.rev, [T("f32", (2, 3))], dims=dims)


@covers("cumsum")
@pytest.mark.parametrize("dtype", ["i32", "i64", "f32", "f64"])
@given(data=st.data())
def test_cumsum_matches_numpy_in_the_operands_dtype(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                 max_side=4)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    assert_same(run(ops.cumsum, [x], axis=axis), np.add.accumulate(x, axis=axis, dtype=x.dtype))


def test_cumsum_keeps_negative_zero_and_wraps_ints():
    assert np.signbit(run(ops.cumsum, [np.array([-0.0, -0.0])], axis=0)).all()
    big = np.array([2**31 - 1, 1], np.int32)
    assert_same(run(ops.cumsum, [big], axis=0), np.array([2**31 - 1, -2**31], np.int32))


@pytest.mark.parametrize("t,axis", [(T("bool", (3,)), 0), (T("f32", (3,)), 1),
                                    (T("f32", ()), 0), (T("i32", (2, 2)), -1)])
def test_cumsum_rejects(t, axis):
    with pytest.raises(IRTypeError):
        rule(ops.cumsum, [t], axis=axis)


@covers("cumprod")
@pytest.mark.parametrize("dtype", ["i32", "i64", "f32", "f64"])
@given(data=st.data())
def test_cumprod_matches_numpy_in_the_operands_dtype(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                 max_side=4)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    with np.errstate(all="ignore"):
        want = np.multiply.accumulate(x, axis=axis, dtype=x.dtype)
    assert_same(run(ops.cumprod, [x], axis=axis), want)


@covers("sort", "argsort")
@pytest.mark.parametrize("dtype", ["bool", "i32", "f32", "f64"])
@given(data=st.data())
def test_sort_and_argsort_match_numpy_ties_and_nan_included(dtype, data):
    few = st.sampled_from([0.0, -0.0, 1.5, np.nan, -np.inf]) if "f" in dtype else None
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0,
                                                 max_side=5), few))
    axis = data.draw(st.integers(0, x.ndim - 1))
    kind = data.draw(st.sampled_from(["quicksort", "heapsort", "stable"]))
    assert_same(run(ops.sort, [x], axis=axis, kind=kind), np.sort(x, axis, kind=kind))
    assert_same(run(ops.argsort, [x], axis=axis, kind=kind),
                np.argsort(x, axis, kind=kind).astype(np.int64))


@pytest.mark.parametrize("opdef", [ops.sort, ops.argsort])
@pytest.mark.parametrize("t,attrs", [(T("f32", ()), dict(axis=0, kind="stable")),
                                     (T("f32", (3,)), dict(axis=1, kind="stable")),
                                     (T("i32", (3,)), dict(axis=0, kind="mergesort"))])
def test_sort_rejects(opdef, t, attrs):
    with pytest.raises(IRTypeError):
        rule(opdef, [t], **attrs)


def _pad_reference(x, value, low, high, interior):
    shape = [lo + hi + n + max(n - 1, 0) * it for n, lo, hi, it in zip(x.shape, low, high,
                                                                         interior)]
    out = np.full(shape, value, x.dtype)
    for idx in np.ndindex(x.shape):
        out[tuple(lo + i * (it + 1) for i, lo, it in zip(idx, low, interior))] = x[idx]
    return out


@covers("pad")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_pad_matches_elementwise_reference(dtype, data):
    x = data.draw(arrays(dtype))
    value = data.draw(arrays(dtype, ()))
    widths = st.lists(st.integers(0, 2), min_size=x.ndim, max_size=x.ndim)
    low, high, interior = data.draw(widths), data.draw(widths), data.draw(widths)
    got = run(ops.pad, [x, value], low=low, high=high, interior=interior)
    assert_same(got, _pad_reference(x, value, low, high, interior))
    if x.ndim and not any(interior):
        assert_same(got, np.pad(x, list(zip(low, high)), constant_values=value))


@pytest.mark.parametrize("value,attrs", [
    (T("f32", (1,)), dict(low=[0], high=[0], interior=[0])),   # value not a scalar
    (T("f64", ()), dict(low=[0], high=[0], interior=[0])),     # value dtype differs
    (T("f32", ()), dict(low=[-1], high=[0], interior=[0])),    # negative width
    (T("f32", ()), dict(low=[0], high=[0], interior=[-1])),    # negative interior
    (T("f32", ()), dict(low=[0, 0], high=[0], interior=[0])),  # one entry per dimension
])
def test_pad_rejects(value, attrs):
    with pytest.raises(IRTypeError):
        rule(ops.pad, [T("f32", (3,)), value], **attrs)


@covers("concatenate")
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_concatenate_matches_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    axis = data.draw(st.integers(0, len(shape) - 1))
    xs = []
    for _ in range(data.draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        xs.append(data.draw(arrays(dtype, tuple(s))))
    assert_same(run(ops.concatenate, xs, axis=axis), np.concatenate(xs, axis=axis))


@pytest.mark.parametrize("types,axis", [
    ([], 0),                                       # no operands
    ([T("f32", (2,))], 1),                         # axis out of range
    ([T("f32", ())], 0),                           # a scalar has no axis
    ([T("f32", (2, 3)), T("f32", (2, 4))], 0),     # other dims differ
    ([T("f32", (2,)), T("f64", (2,))], 0),         # dtypes differ
    ([T("f32", (2,)), T("f32", (2, 1))], 0),       # ranks differ
])
def test_concatenate_rejects(types, axis):
    with pytest.raises(IRTypeError):
        rule(ops.concatenate, types, axis=axis)


# -- take and scatter_add --------------------------------------------------------------------

@covers("take")
# Every operand dtype and both index dtypes, not their product: take's result has the
# operand's dtype whatever the index's, which is only read as positions.
@pytest.mark.parametrize("dtype,idx_dtype", [(d, ("i32", "i64")[k % 2])
                                             for k, d in enumerate(DTYPES)])
@given(data=st.data())
def test_take_matches_numpy(dtype, idx_dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=3)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    idx = data.draw(arrays(idx_dtype, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0,
                                                       max_side=3),
                           st.integers(0, x.shape[axis] - 1)))
    assert_same(run(ops.take, [x, idx], axis=axis), np.take(x, idx, axis=axis))


@pytest.mark.parametrize("idx,axis", [(T("f32", (2,)), 0), (T("bool", (2,)), 0),
                                      (T("i64", (2,)), 2), (T("i64", (2,)), -1)])
def test_take_rejects_float_or_bool_indices_and_bad_axis(idx, axis):
    with pytest.raises(IRTypeError):
        rule(ops.take, [T("f32", (3, 4)), idx], axis=axis)


@covers("scatter_add")
@pytest.mark.parametrize("dtype", ["i32", "i64", "f32", "f64"])
@given(data=st.data())
def test_scatter_add_accumulates_repeated_indices(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=3), st.integers(-9, 9)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    idx = data.draw(arrays("i64", hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                           st.integers(0, x.shape[axis] - 1)))
    upd = data.draw(arrays(dtype, x.shape[:axis] + idx.shape + x.shape[axis + 1:],
                           st.integers(-9, 9)))
    want = x.copy()
    for j in np.ndindex(idx.shape):  # reference: one add per index, in order
        src = upd[(slice(None),) * axis + j]
        dst = (slice(None),) * axis + (idx[j],)
        want[dst] += src
    assert_same(run(ops.scatter_add, [x, idx, upd], axis=axis), want)


@covers("scatter")
@pytest.mark.parametrize("dtype", ["i64", "f64", "bool"])
@given(data=st.data())
def test_scatter_overwrites_in_order_so_a_repeated_index_keeps_its_last_write(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=3)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    idx = data.draw(arrays("i64", hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                           st.integers(0, x.shape[axis] - 1)))
    upd = data.draw(arrays(dtype, x.shape[:axis] + idx.shape + x.shape[axis + 1:]))
    want = x.copy()
    for j in np.ndindex(idx.shape):  # reference: one write per index, in order
        want[(slice(None),) * axis + (idx[j],)] = upd[(slice(None),) * axis + j]
    assert_same(run(ops.scatter, [x, idx, upd], axis=axis), want)


@covers("update_slice")
@pytest.mark.parametrize("dtype", ["i64", "f64", "bool"])
@given(data=st.data())
def test_update_slice_overwrites_a_strided_box_and_keeps_the_rest(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=5)))
    starts = [data.draw(st.integers(0, n - 1)) for n in x.shape]
    steps = [data.draw(st.integers(1, 3)) for _ in x.shape]
    box = tuple(data.draw(st.integers(0, (n - 1 - a) // s + 1))
                for n, a, s in zip(x.shape, starts, steps))
    v = data.draw(arrays(dtype, box))
    want = x.copy()             # reference: NumPy's own strided assignment
    want[tuple(slice(a, None, s) for a, s in zip(starts, steps))][
        tuple(slice(0, m) for m in box)] = v
    assert_same(run(ops.update_slice, [x, v], starts=starts, steps=steps), want)


@covers("window")
@pytest.mark.parametrize("dtype", ["i64", "f64"])
@given(data=st.data())
def test_window_gives_every_window_with_its_dims_last(dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=5)))
    dims = data.draw(st.permutations(range(x.ndim)))[:data.draw(st.integers(1, x.ndim))]
    sizes = [data.draw(st.integers(0, x.shape[d])) for d in dims]
    want = np.lib.stride_tricks.sliding_window_view(x, sizes, axis=dims)
    assert_same(run(ops.window, [x], dims=dims, sizes=sizes), want)


def test_window_rejects_a_window_longer_than_its_dimension():
    with pytest.raises(IRTypeError):
        rule(ops.window, [T("f32", (3, 4))], dims=[1], sizes=[5])
    with pytest.raises(IRTypeError):
        rule(ops.window, [T("f32", (3, 4))], dims=[1, 1], sizes=[2, 2])


def test_update_slice_rejects_a_box_that_does_not_fit():
    with pytest.raises(IRTypeError):
        rule(ops.update_slice, [T("f32", (3, 4)), T("f32", (2, 2))], starts=[2, 0], steps=[1, 1])
    with pytest.raises(IRTypeError):
        rule(ops.update_slice, [T("f32", (3, 4)), T("f64", (1, 1))], starts=[0, 0], steps=[1, 1])
    with pytest.raises(IRTypeError):
        rule(ops.update_slice, [T("f32", (3, 4)), T("f32", (2,))], starts=[0], steps=[1])


def test_scatter_add_rejects_updates_of_the_wrong_type():
    with pytest.raises(IRTypeError):
        rule(ops.scatter_add, [T("f32", (3, 4)), T("i64", (2,)), T("f32", (3, 4))], axis=0)
    with pytest.raises(IRTypeError):
        rule(ops.scatter_add, [T("f32", (3, 4)), T("i64", (2,)), T("f64", (2, 4))], axis=0)


# -- reductions ------------------------------------------------------------------------------

REDUCTIONS = {"reduce_sum": (np.sum, "i32 i64 f32 f64"),
              "reduce_prod": (np.prod, "i32 i64 f32 f64"),
              "reduce_max": (np.max, CMP), "reduce_min": (np.min, CMP)}
COVERED.update(REDUCTIONS)


@pytest.mark.parametrize("name,dtype", [(n, d) for n, (_, ds) in REDUCTIONS.items()
                                        for d in ds.split()])
@settings(max_examples=15)
@given(data=st.data())
def test_reduction_matches_numpy_in_the_operand_dtype(name, dtype, data):
    """The IR keeps the operand's dtype (NumPy's sum of int32 gives int64): the tracer
    converts first where NumPy would widen."""
    fn, _ = REDUCTIONS[name]
    nonempty = name in ("reduce_max", "reduce_min")
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=int(nonempty),
                                                 max_side=3)))
    axes = sorted(data.draw(st.sets(st.integers(0, x.ndim - 1)))) if x.ndim else []
    with np.errstate(all="ignore"):
        want = np.asarray(fn(x, axis=tuple(axes))).astype(x.dtype)
    assert_same(run(OPS[name], [x], axes=axes), want, rtol=1e-5 if dtype == "f32" else 1e-12)


def test_reduce_sum_over_an_empty_axis_is_zero_and_prod_is_one():
    x = np.zeros((0, 2), np.float32)
    assert run(ops.reduce_sum, [x], axes=[0]).tolist() == [0.0, 0.0]
    assert run(ops.reduce_prod, [x], axes=[0]).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_reduce_max_and_min_propagate_nan(dtype):
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], as_dtype(dtype).np)
    assert np.isnan(run(ops.reduce_max, [x], axes=[1])).tolist() == [True, False]
    assert np.isnan(run(ops.reduce_min, [x], axes=[0, 1]))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axes", [(2,), (-1,), (1, 0), (0, 0)])
def test_reductions_reject_bad_axes(name, axes):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T("f32", (2, 3))], axes=axes)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod"])
def test_sum_and_prod_reject_bool(name):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T("bool", (2,))], axes=[0])


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_max_and_min_reject_an_empty_axis(name):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T("f32", (2, 0))], axes=[1])


@covers("argmax", "argmin")
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_argmax_argmin_match_numpy_and_give_i64(name, dtype, data):
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1,
                                                 max_side=3)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    want = getattr(np, name)(x, axis=axis).astype(np.int64)
    assert_same(run(OPS[name], [x], axis=axis), want)


def test_argmax_picks_the_first_nan_like_numpy():
    x = np.array([1.0, np.nan, 5.0, np.nan])
    assert run(ops.argmax, [x], axis=0).item() == 1
    assert run(ops.argmin, [x], axis=0).item() == 1


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", [((2, 3), 2), ((2, 3), -1), ((), 0), ((2, 0), 1)])
def test_argmax_argmin_reject_bad_or_empty_axis(name, shape, axis):
    with pytest.raises(IRTypeError):
        rule(OPS[name], [T("f32", shape)], axis=axis)


# -- matmul ----------------------------------------------------------------------------------

@covers("matmul")
@pytest.mark.parametrize("dtype", ["i32", "i64", "f32", "f64"])
@given(data=st.data())
def test_matmul_matches_numpy(dtype, data):
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    m, k, n = (data.draw(st.integers(0, 3)) for _ in range(3))
    elems = st.integers(-9, 9)
    a = data.draw(arrays(dtype, batch + (m, k), elems))
    b = data.draw(arrays(dtype, batch + (k, n), elems))
    assert_same(run(ops.matmul, [a, b]), np.matmul(a, b))


@pytest.mark.parametrize("a,b", [
    (T("f32", (2, 3)), T("f32", (4, 2))),          # inner dims differ
    (T("f32", (3,)), T("f32", (3, 2))),            # 1-D operand (the tracer reshapes)
    (T("f32", (2, 2, 3)), T("f32", (3, 3, 2))),    # batch dims differ
    (T("f32", (1, 2, 3)), T("f32", (4, 3, 2))),    # no batch broadcasting
    (T("f32", (2, 3)), T("f64", (3, 2))),          # dtypes differ
    (T("bool", (2, 3)), T("bool", (3, 2))),        # bool
])
def test_matmul_rejects(a, b):
    with pytest.raises(IRTypeError):
        rule(ops.matmul, [a, b])


# -- side effects, regions, barriers ---------------------------------------------------------

@covers("debug_print")
def test_debug_print_formats_its_operands_and_has_no_results(capsys):
    b = Builder()
    x = b.param(T("i32", (2,)), "x")
    op = b.emit(ops.debug_print, [x, x], fmt="x = {} and {}")
    assert op.results == [] and OPS["debug_print"].side_effect
    fn = verify(b.build([x]))
    fn(np.array([1, 2], np.int32))
    assert capsys.readouterr().out == "x = [1 2] and [1 2]\n"


def _body():
    b = Builder("body")
    p = b.param(T("f64", (3,)), "p")
    q = b.param(T("f64", (3,)), "q")
    s = b.emit(ops.add, [p, q]).result
    return b.build([s, b.emit(ops.neg, [s]).result])


@covers("call")
def test_call_runs_its_body():
    b = Builder()
    x, y = b.param(T("f64", (3,)), "x"), b.param(T("f64", (3,)), "y")
    op = b.emit(ops.call, [x, y], regions=[_body()])
    fn = verify(b.build(op.results))
    u, v = np.arange(3.0), np.ones(3)
    s, n = fn(u, v)
    assert_same(s, u + v)
    assert_same(n, -(u + v))


def test_call_rejects_operands_unlike_its_parameters_and_missing_body():
    with pytest.raises(IRTypeError):
        rule(ops.call, [T("f64", (3,)), T("f32", (3,))], regions=[_body()])
    with pytest.raises(IRTypeError):
        rule(ops.call, [T("f64", (3,)), T("f64", (3,))])


def _unary(name, opdef, t=T("f64", (3,))):
    b = Builder(name)
    p = b.param(t, "p")
    return b.build([b.emit(opdef, [p]).result])


@covers("cond")
@given(index=st.integers(-3, 4))
def test_cond_runs_the_branch_of_its_clamped_index(index):
    b = Builder()
    i, x = b.param(T("i32"), "i"), b.param(T("f64", (3,)), "x")
    op = b.emit(ops.cond, [i, x], regions=[_unary("a", ops.neg), _unary("b", ops.exp)])
    u = np.array([0.5, -1.0, 2.0])
    (got,) = verify(b.build(op.results))(np.int32(index), u)
    assert_same(got, -u if index <= 0 else np.exp(u))


@covers("while_loop")
def test_while_loop_runs_until_its_condition_is_false():
    c = Builder("cond_fn")
    limit, x = c.param(T("f64")), c.param(T("f64"))
    cond_fn = c.build([c.emit(ops.lt, [x, limit]).result])
    b = Builder("body_fn")
    _, x = b.param(T("f64")), b.param(T("f64"))
    body_fn = b.build([b.emit(ops.add, [x, x]).result])
    m = Builder()
    op = m.emit(ops.while_loop, [m.param(T("f64")), m.param(T("f64"))], consts=1,
                regions=[cond_fn, body_fn])
    fn = verify(m.build(op.results))
    assert_same(fn(np.float64(100.0), np.float64(3.0))[0], np.float64(192.0))
    assert_same(fn(np.float64(1.0), np.float64(3.0))[0], np.float64(3.0))


@covers("scan")
@given(reverse=st.booleans(), xs=arrays("f64", (4, 2), st.floats(-10, 10)))
def test_scan_matches_a_python_loop_with_ys_in_iteration_order(reverse, xs):
    b = Builder("body")
    h, x = b.param(T("f64", (2,))), b.param(T("f64", (2,)))
    body = b.build([b.emit(ops.add, [h, x]).result, h])
    m = Builder()
    op = m.emit(ops.scan, [m.param(T("f64", (2,))), m.param(T("f64", (4, 2)))], consts=0,
                carries=1, length=4, reverse=reverse, regions=[body])
    carry, ys = verify(m.build(op.results))(np.zeros(2), xs)
    want_h, want_ys = np.zeros(2), np.zeros((4, 2))
    for i in (range(3, -1, -1) if reverse else range(4)):
        want_ys[i] = want_h
        want_h = want_h + xs[i]
    assert_same(carry, want_h)
    assert_same(ys, want_ys)


@covers("optimization_barrier")
@given(xs=st.lists(arrays("f32"), max_size=3))
def test_optimization_barrier_is_identity_without_aliasing(xs):
    outs = run(ops.optimization_barrier, xs) if len(xs) != 1 else [run(ops.optimization_barrier,
                                                                       xs)]
    assert len(outs) == len(xs)
    for o, x in zip(outs, xs):
        assert_same(o, x)
        assert not np.shares_memory(o, x) or o.size == 0


# -- linear algebra: np.linalg's results, batched; the right-hand side is always [..., n, k] ---

def _spd(rng, shape, dtype):
    x = rng.standard_normal(shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@covers("solve", "triangular_solve", "cholesky", "slogdet")
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("batch", [(), (2,), (2, 1)])
def test_linalg_ops_match_numpy_per_matrix_of_the_batch(dtype, batch):
    rng = np.random.default_rng(len(batch))
    np_dtype = as_dtype(dtype).np
    a = _spd(rng, batch + (3, 3), np_dtype)
    b = rng.standard_normal(batch + (3, 2)).astype(np_dtype)
    tol = 1e-5 if dtype == "f32" else 1e-12
    assert_same(run(ops.solve, [a, b]), np.linalg.solve(a, b), tol)
    low = np.linalg.cholesky(a)
    assert_same(run(ops.cholesky, [a]), low, tol)
    sign, logdet = np.linalg.slogdet(a)
    assert_same(run(ops.slogdet, [a]), np.stack([sign, logdet], -1), tol)
    # only the named triangle is read: the other one is garbage here
    garbage = low + np.triu(np.full((3, 3), 7.0, np_dtype), 1)
    want = np.linalg.solve(low, b)
    assert_same(run(ops.triangular_solve, [garbage, b], lower=True), want, 10 * tol)
    upper = np.swapaxes(garbage, -1, -2)
    assert_same(run(ops.triangular_solve, [upper, b], lower=False),
                np.linalg.solve(np.swapaxes(low, -1, -2), b), 10 * tol)


def test_linalg_ops_keep_numpys_special_results_and_errors():
    assert_same(run(ops.slogdet, [np.zeros((1, 2, 2))]), np.array([[0.0, -np.inf]]))
    assert_same(run(ops.slogdet, [np.zeros((1, 0, 0))]), np.array([[1.0, 0.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        run(ops.solve, [np.zeros((1, 2, 2)), np.ones((1, 2, 1))])
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        run(ops.cholesky, [-np.eye(2)[None]])
    with np.errstate(all="ignore"):
        x = run(ops.triangular_solve, [np.zeros((1, 2, 2)), np.ones((1, 2, 1))], lower=True)
    assert np.isinf(x[0, 0, 0]) and np.isnan(x[0, 1, 0])    # no error: a zero pivot's inf


@pytest.mark.parametrize("types", [
    [T("f64", (3,)), T("f64", (3, 1))],            # a is not a matrix
    [T("f64", (2, 3)), T("f64", (2, 1))],          # not square
    [T("i64", (2, 2)), T("i64", (2, 1))],          # not float
    [T("f64", (2, 2)), T("f32", (2, 1))],          # dtypes differ
    [T("f64", (2, 2, 2)), T("f64", (3, 2, 1))],    # batches differ
    [T("f64", (2, 2)), T("f64", (3, 1))]])         # n differs
def test_solves_reject(types):
    for opdef, attrs in ((ops.solve, {}), (ops.triangular_solve, {"lower": True})):
        with pytest.raises(IRTypeError):
            rule(opdef, types, **attrs)


@pytest.mark.parametrize("t", [T("f64", (3,)), T("f64", (2, 3)), T("i32", (2, 2))])
def test_factorizations_reject(t):
    for opdef in (ops.cholesky, ops.slogdet):
        with pytest.raises(IRTypeError):
            rule(opdef, [t])


@covers("eigh", "svd", "qr")
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_decompositions_pack_numpys_results(dtype):
    rng = np.random.default_rng(3)
    np_dtype = as_dtype(dtype).np
    s = _spd(rng, (2, 3, 3), np_dtype)
    tall = rng.standard_normal((2, 4, 3)).astype(np_dtype)
    w, v = np.linalg.eigh(s, "U")
    assert_same(run(ops.eigh, [s], lower=False, vectors=True), np.concatenate(
        [v, w[:, None, :]], axis=1))
    assert_same(run(ops.eigh, [s], lower=True, vectors=False), np.linalg.eigvalsh(s))
    u, sv, vh = np.linalg.svd(tall, full_matrices=False)
    packed = run(ops.svd, [tall], full_matrices=False, compute_uv=True)       # [2, 4 + 1 + 3, 3]
    assert_same(packed, np.concatenate([u, sv[:, None, :], vh], axis=1))
    u, sv, vh = np.linalg.svd(tall)                                           # [2, 4 + 1 + 3, 4]
    packed = run(ops.svd, [tall], full_matrices=True, compute_uv=True)
    assert_same(packed[:, :4], u)
    assert_same(packed[:, 4:], np.pad(np.concatenate([sv[:, None, :], vh], 1), [(0, 0)] * 2 +
                                      [(0, 1)]))
    assert_same(run(ops.svd, [tall], full_matrices=False, compute_uv=False),
                np.linalg.svd(tall, compute_uv=False))
    q, r = np.linalg.qr(tall, "complete")                                     # [2, 4, 4 + 3]
    assert_same(run(ops.qr, [tall], mode="complete"), np.concatenate([q, r], axis=2))
    q, r = np.linalg.qr(tall)                                                 # [2, 4, 3 + 3]
    assert_same(run(ops.qr, [tall], mode="reduced"),
                np.concatenate([q, np.pad(r, [(0, 0), (0, 1), (0, 0)])], axis=2))
    assert_same(run(ops.qr, [tall], mode="r"), r)


@pytest.mark.parametrize("opdef,attrs,t", [
    (ops.eigh, {"lower": True, "vectors": True}, T("f64", (2, 3))),      # not square
    (ops.eigh, {"lower": True, "vectors": False}, T("i64", (2, 2))),     # not float
    (ops.svd, {"full_matrices": True, "compute_uv": True}, T("f64", (3,))),
    (ops.qr, {"mode": "raw"}, T("f64", (3, 2))),                          # no such mode
    (ops.qr, {"mode": "r"}, T("i32", (3, 2)))])
def test_decompositions_reject(opdef, attrs, t):
    with pytest.raises(IRTypeError):
        rule(opdef, [t], **attrs)
