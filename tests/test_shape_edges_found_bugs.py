"""Wrong answers, crashes and refusals found by calling jitted and differentiated functions
with edge-case shapes (0-d, size 0, size 1, negative axes, odd layouts); each test pins the
behaviour that replaced one."""
import numpy as np
import pytest

import tracejit


# A 0-d array argument returned as it is (f(x) = x, x.T, np.squeeze(x)) came back as a NumPy
# scalar (np.float64), where NumPy returns the 0-d array; a NumPy scalar argument returned
# stays a NumPy scalar, as in NumPy.
def test_a_zero_d_array_argument_returned_unchanged_stays_a_zero_d_array():
    def f(x):
        return x, x.T, np.squeeze(x)

    for be in ("interpreter", "numba"):
        jf = tracejit.jit(f, backend=be)
        for _ in range(2):
            out = jf(np.array(1.5))
            assert all(type(o) is np.ndarray and o.shape == () and o == 1.5 for o in out)
            out = jf(np.float64(1.5))       # the same cache key, unless the trace asked
            assert [type(o) for o in out] == [np.float64] * 3 and out[0] == 1.5
    # np.flip of a 0-d array is NumPy's x[()], a NumPy scalar
    assert type(tracejit.jit(lambda x: np.flip(x))(np.array(1.5))) is np.float64


# np.split at a negative point (np.split(x, [-2]), np.hsplit(x, [-1])) raised an internal
# IRTypeError ("slice -2:5:1 invalid"), and into sections of an empty axis a raw "range() arg 3
# must not be zero"; np.split(x, -1) gave [] and np.array_split(x, 0) a ZeroDivisionError
# where NumPy's ValueError says the number of sections must be positive.
def test_split_at_negative_points_and_of_an_empty_axis_is_numpys():
    def f(x, e):
        return (np.split(x, [-2]), np.split(x, [-9, 2, 9]), np.hsplit(x[None], [-1]),
                np.array_split(x, [-1]), np.split(e, 3), np.array_split(e, 2))

    x, e = np.arange(5.0), np.zeros((0,))
    for be in ("interpreter", "numba"):
        out, ref = tracejit.jit(f, backend=be)(x, e), f(x, e)
        assert [[p.shape for p in o] for o in out] == [[p.shape for p in o] for o in ref]
        for o, r in zip(out, ref):
            for p, q in zip(o, r):
                np.testing.assert_array_equal(p, q)
    g = tracejit.grad(lambda x: np.split(x, [-2])[1] @ np.array([2.0, 3.0]))(x)
    np.testing.assert_array_equal(g, [0, 0, 0, 2, 3])
    for bad in (lambda x: np.split(x, -1), lambda x: np.array_split(x, 0)):
        with pytest.raises(ValueError, match="number sections must be larger than 0"):
            tracejit.jit(bad, backend="interpreter")(x)


# np.copy(x, order="F") was x in C order, so a later ravel(order="K") or reshape(order="A")
# read it in the wrong order; x.transpose(None) raised an internal TypeError (int(None));
# np.delete(x, []) raised an IndexError (NumPy deletes nothing).
def test_copy_in_fortran_order_transpose_of_none_and_delete_of_nothing_are_numpys():
    def f(x):
        return (np.copy(x, order="F").ravel(order="K"), np.copy(x.T, order="A").ravel("A"),
                x.transpose(None), np.delete(x, []), np.delete(x, [], axis=1))

    x = np.arange(6.0).reshape(2, 3)
    out, ref = tracejit.jit(f, backend="interpreter")(x), f(x)
    for o, r in zip(out, ref):
        assert o.shape == r.shape
        np.testing.assert_array_equal(o, r)


# np.expand_dims(x, (0, 0)) gave one new axis where NumPy says "repeated axis"; np.diff(x, n=-1)
# gave x where NumPy refuses a negative order.
@pytest.mark.parametrize("fn", [lambda x: np.expand_dims(x, (0, 0)),
                                lambda x: np.expand_dims(x, (1, -2)),
                                lambda x: np.diff(x, n=-1)])
def test_repeated_new_axes_and_a_negative_diff_order_are_numpys_value_error(fn):
    x = np.arange(3.0)
    with pytest.raises(ValueError):
        fn(x)
    with pytest.raises(ValueError):
        tracejit.jit(fn, backend="interpreter")(x)


# NumPy reads an int axis 0 or -1 of a 0-d array as the whole array in its reductions, cumsum,
# argmax, take, repeat and squeeze (np.sum(np.array(3.0), axis=-1) is 3.0), so a softmax or
# loss written with axis=-1 runs on a 0-d value; tracejit raised AxisError. A tuple of axes,
# np.mean and np.add.accumulate still refuse a 0-d array, as NumPy does.
def test_reductions_over_axis_0_or_minus_1_of_a_zero_d_array_are_numpys():
    def f(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True), np.sum(z, 0), np.prod(z, -1), np.min(z, 0),
                np.any(z, axis=0), np.argmax(z, axis=-1), np.cumsum(z, axis=0),
                np.squeeze(z, axis=0), np.take(z, 0, axis=0), np.repeat(z, 2, axis=-1),
                np.nanmax(z, axis=0), np.count_nonzero(z, axis=-1))

    z = np.array(3.0)
    for be in ("interpreter", "numba"):
        for o, r in zip(tracejit.jit(f, backend=be)(z), f(z)):
            assert np.shape(o) == np.shape(r) and np.asarray(o).dtype == np.asarray(r).dtype
            np.testing.assert_array_equal(o, r)
    assert tracejit.grad(lambda z: np.sum(z ** 2, axis=-1))(z) == 6.0
    for bad, exc in [(lambda z: np.sum(z, axis=(0,)), np.exceptions.AxisError),
                     (lambda z: np.mean(z, axis=0), np.exceptions.AxisError),
                     (lambda z: np.add.accumulate(z), TypeError)]:
        with pytest.raises(exc):
            bad(z)
        with pytest.raises(exc):
            tracejit.jit(bad, backend="interpreter")(z)


# np.where (np.select, np.tensordot, np.pad, np.roll) of 0-d operands is a 0-d array in NumPy, not
# a NumPy scalar as a ufunc does: jit gave np.float64, which t += 1 then rebound instead of
# writing into.
def test_a_zero_d_np_where_result_is_a_zero_d_array():
    def f(z, v):
        t = np.where(z > 0, z, 0.0)
        t += 1
        return (t, np.select([z > 0], [z]), np.tensordot(v, v, axes=1), np.pad(z, 1),
                np.roll(z, 1), z * 2)

    z, v = np.array(1.5), np.arange(3.0)
    for be in ("interpreter", "numba"):
        out, ref = tracejit.jit(f, backend=be)(z, v), f(z, v)
        assert [type(o) for o in out] == [type(r) for r in ref] == [np.ndarray] * 5 + [np.float64]
        np.testing.assert_array_equal(out, ref)


# x[i, j] = v with v of shape (1,) (or [1.0], or at 0-d index arrays) wrote v[0], where NumPy
# raises "setting an array element with a sequence."; x[i, j, ...] = v and x[[i], j] = v
# broadcast, as in NumPy.
def test_an_array_written_into_one_element_is_numpys_value_error():
    def f(x, i, v):
        x[i, 0, ...] = v
        x[[i], 1] = v
        x[1, 2] = v[0]
        return x

    x, i, v = np.zeros((2, 3)), np.array(1), np.array([4.0])
    np.testing.assert_array_equal(tracejit.jit(f, backend="interpreter")(x.copy(), i, v),
                                  f(x.copy(), i, v))
    for key in [(0, 0), (np.array(0), np.array(0)), "traced"]:
        def g(x, i, v, key=key):
            x[(i, 0) if key == "traced" else key] = v
            return x
        for value in (v, [4.0]):
            with pytest.raises(ValueError, match="with a sequence"):
                g(x.copy(), i, value)
            with pytest.raises(ValueError, match="with a sequence"):
                tracejit.jit(g, backend="interpreter")(x.copy(), i, value)


# tracejit.scipy.special.logsumexp of a 1-d or 0-d array came back from jit as a 0-d array (a
# squeezed view), where SciPy gives a NumPy scalar; np.cov of a 1-d array the other way round.
def test_logsumexp_to_a_scalar_is_a_numpy_scalar_and_cov_of_one_variable_a_zero_d_array():
    import scipy.special

    from tracejit.scipy import special

    def f(v, z):
        return (special.logsumexp(v), special.logsumexp(z),
                special.logsumexp(v, b=v, return_sign=True)[1], np.cov(v))

    v, z = np.arange(3.0), np.array(0.5)
    out = tracejit.jit(f, backend="interpreter")(v, z)
    ref = (scipy.special.logsumexp(v), scipy.special.logsumexp(z),
           scipy.special.logsumexp(v, b=v, return_sign=True)[1], np.cov(v))
    assert [type(o) for o in out] == [type(r) for r in ref]
    np.testing.assert_allclose(out, ref)


# A NumPy scalar's astype (x.sum().astype(np.float32), x[0].astype(...)) came back from jit as
# a 0-d array, NumPy's being a NumPy scalar; a 0-d NumPy constant returned (np.array(2.0),
# np.asarray(5)) came back as a NumPy scalar, NumPy's being the 0-d array.
def test_astype_of_a_numpy_scalar_and_a_returned_zero_d_constant_keep_numpys_types():
    def f(x, z):
        return (x.sum().astype(np.float32), x[0].astype(np.int32), z.astype(np.float32),
                np.array(2.0), np.asarray(5))

    x, z = np.arange(3.0), np.array(1.5)
    for be in ("interpreter", "numba"):
        out, ref = tracejit.jit(f, backend=be)(x, z), f(x, z)
        assert [type(o) for o in out] == [type(r) for r in ref]
        assert [o.dtype for o in out] == [r.dtype for r in ref]


# x[:, i] of an array with no rows, at traced indices out of range: NumPy raises IndexError
# although the result is empty, jit returned the empty array (the take checks the indices it
# reads, none), and x[:, i] = v wrote nothing without a check. np.take, which checks only
# where it reads, still returns it, as NumPy's.
def test_traced_indices_out_of_range_into_an_empty_array_are_numpys_index_error():
    x = np.zeros((0, 4))
    for be in ("interpreter", "numba"):
        f = tracejit.jit(lambda x, i: x[:, i], backend=be)
        assert f(x, np.array([1, -4])).shape == (0, 2)
        for bad in (np.array([1, 4]), np.array([-5])):
            with pytest.raises(IndexError):
                x[:, bad]
            with pytest.raises(IndexError):
                f(x, bad)
        g = tracejit.jit(lambda x, i: np.take(x, i, axis=1), backend=be)
        assert g(x, np.array([1, 4])).shape == np.take(x, np.array([1, 4]), axis=1).shape
    with pytest.raises(IndexError):         # an axis of size 0: any index is out of range
        tracejit.jit(lambda x, i: x[:, i], backend="interpreter")(np.zeros((0, 0)), np.array([0]))

    def write(x, i):                        # the same for a write, which writes nothing
        x[:, i] = 1.0
        return x

    f = tracejit.jit(write, backend="numba")
    assert f(x, np.array([3])).shape == (0, 4)
    with pytest.raises(IndexError):
        write(x, np.array([4]))
    with pytest.raises(IndexError):
        f(x, np.array([4]))
