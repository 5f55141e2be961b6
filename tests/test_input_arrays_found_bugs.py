"""Wrong answers and crashes found by calling jitted and differentiated functions with unusual
input arrays (empty, size-1, subclasses, odd dtypes, layouts); each test pins the behaviour
that replaced one."""
import numpy as np
import pytest

import tracejit

X = np.arange(12.0).reshape(3, 4)
MASKED = np.ma.masked_array(X, X > 5)


# A masked array or np.matrix read from the function's globals was made a plain constant: the
# mask (or matrix product) silently dropped, 506.0 where NumPy gives 55.0. Refused, as such an
# argument is, naming the user's line.
@pytest.mark.parametrize("fn", [lambda x: (x * MASKED).sum(),
                                lambda x: np.add(MASKED, x).sum()])
def test_a_global_masked_array_is_refused_not_read_without_its_mask(fn):
    with pytest.raises(TypeError, match=r"MaskedArray.*test_input_arrays_found_bugs\.py:\d+"
                                        r"(.|\n)*np\.ma\.filled"):
        tracejit.jit(fn)(X)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")     # np.matrix's own
def test_a_closure_np_matrix_is_refused_not_an_elementwise_broadcast_error():
    m = np.matrix(X)

    def f(x):
        return m * x.T          # a matrix product in NumPy

    with pytest.raises(TypeError, match=r"numpy\.matrix(.|\n)*"
                                        r"test_input_arrays_found_bugs\.py:\d+(.|\n)*@"):
        tracejit.jit(f)(X)


def test_a_long_double_argument_is_told_to_become_float64_not_float32():
    with pytest.raises(TypeError, match=r"astype\(np\.float64\)"):
        tracejit.jit(lambda x: x * 2)(np.ones(3, np.longdouble))


# jacfwd / jacrev / hessian of an empty argument or output: AttributeError ('NoneType' object
# has no attribute 'kind') and "need at least one array to stack". JAX gives empty Jacobians.
@pytest.mark.parametrize("transform", [tracejit.jacfwd, tracejit.jacrev])
def test_jacobians_of_empty_arrays_are_empty_arrays(transform):
    j = transform(lambda x: x ** 2)(np.zeros(0, np.float32))
    assert j.shape == (0, 0) and j.dtype == np.float32
    j = transform(lambda x: x[:0] * 2)(np.ones(3))
    assert j.shape == (0, 3) and j.dtype == np.float64
    j = transform(lambda x: x.sum() + np.ones(2))(np.zeros((2, 0)))
    assert j.shape == (2, 2, 0)
    j = transform(lambda d: d["a"] * 2 + d["b"].sum())({"a": np.ones(2), "b": np.zeros(0)})
    np.testing.assert_array_equal(j["a"], 2 * np.eye(2))
    assert j["b"].shape == (2, 0)


def test_hessian_of_an_empty_argument_is_empty():
    h = tracejit.hessian(lambda x: (x ** 3).sum())(np.zeros(0))
    assert h.shape == (0, 0)
    np.testing.assert_allclose(tracejit.hessian(lambda x: (x ** 3).sum())(np.array([2.0])),
                               [[12.0]])


# An np.longlong (or np.ulonglong) array: a dtype equal to int64 (uint64) but of another type,
# which a direct kernel checks by type: "a kernel was called with arguments of other types or
# layouts than it was compiled for", on every call, the copy into the planned layout keeping
# the dtype.
@pytest.mark.parametrize("dtype", [np.longlong, np.ulonglong])
def test_a_longlong_array_runs_as_int64(dtype):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    f = tracejit.jit(lambda x, s: (x * 2 + x.sum(axis=0)) * s)
    for _ in range(2):
        np.testing.assert_array_equal(f(a, dtype(3)), (a * 2 + a.sum(axis=0)) * dtype(3))
        f.wait_compiled()
    f = tracejit.jit(lambda x: x[::2] * 2)
    np.testing.assert_array_equal(f(np.arange(8, dtype=dtype)), np.arange(0, 8, 2) * 2)


def test_a_longlong_argument_written_into_is_updated():
    def f(x):
        x += 1
        return x * 2

    a = np.arange(4, dtype=np.longlong)
    np.testing.assert_array_equal(tracejit.jit(f)(a), [2, 4, 6, 8])
    np.testing.assert_array_equal(a, [1, 2, 3, 4])


# ravel(order="K") of a view with a negative stride (x[::-1].T) was read in C order, and one
# of a broadcast view sorted by stride alone: NumPy reads both in its iterator's memory order.
@pytest.mark.parametrize("view", [
    lambda x: x.T[::-1],
    lambda x: x.T[:, ::-1],
    lambda x: x[::-1, ::2].T,
    lambda x: x.reshape(2, 3, 2).transpose(2, 0, 1)[:, ::-1],
    lambda x: np.broadcast_to(x[:, :1][::-1], (3, 4)).T,
    lambda x: np.broadcast_to(x[0][::-1], (2, 4)).T,
])
def test_ravel_order_k_of_reversed_and_broadcast_views_reads_numpys_order(view):
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(tracejit.jit(lambda x: view(x).ravel(order="K"))(x),
                                  view(x).ravel(order="K"))
    # the view passed as the argument: traced again with its strides
    np.testing.assert_array_equal(tracejit.jit(lambda v: np.ravel(v, order="K"))(view(x)),
                                  view(x).ravel(order="K"))


# np.reshape(..., order="F" or "A") ignored the order: a transposed or Fortran-ordered array
# silently read in C order (and order="K", an error in NumPy, accepted); x.reshape(order=...)
# was refused. Fortran order is the C-order reshape of the transpose, transposed back.
@pytest.mark.parametrize("order", ["C", "F", "A"])
@pytest.mark.parametrize("make", [lambda x: x, lambda x: x.T, np.asfortranarray,
                                  lambda x: x[::-1, ::2]])
def test_reshape_follows_its_order(make, order):
    x = make(np.arange(12.0).reshape(3, 4))
    want = (np.reshape(x, (2, -1), order=order), x.reshape(-1, 2, order=order))
    got = tracejit.jit(lambda v: (np.reshape(v, (2, -1), order=order),
                                  v.reshape(-1, 2, order=order)))(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_reshape_in_fortran_order_is_a_view_that_writes_reach():
    def f(x):
        y = x.reshape(2, 6, order="F")
        y[0, 1] = -5.0
        return y

    x, x_eager = np.arange(12.0).reshape(3, 4), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(tracejit.jit(f)(x), f(x_eager))
    np.testing.assert_array_equal(x, x_eager)


def test_reshape_order_k_is_refused_as_numpy_refuses_it():
    with pytest.raises(ValueError, match=r"order 'K' is not permitted(.|\n)*"
                                         r"test_input_arrays_found_bugs\.py:\d+"):
        tracejit.jit(lambda x: np.reshape(x, (4, 3), order="K"))(np.ones((3, 4)))


# x.flatten("A") / flatten("K") copied first (a C-ordered copy), then read the copy: a
# Fortran-ordered or transposed array came back in C order. flatten("F") was refused.
@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("make", [lambda x: x.T, np.asfortranarray, lambda x: x[::-1].T])
def test_flatten_reads_the_order_it_is_given(make, order):
    x = make(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(tracejit.jit(lambda v: v.flatten(order))(x), x.flatten(order))
    np.testing.assert_array_equal(tracejit.jit(lambda v: v.T.flatten(order))(x),
                                  x.T.flatten(order))
