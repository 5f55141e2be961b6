"""An argument's memory layout decides, as in NumPy, whether a reshape of it is a view (a write
through it reaches the caller's array) or a copy (it does not): a Fortran-ordered or strided
argument traces for its own strides (driver/signature.py, tracer/views.argument_root)."""
import numpy as np
import pytest

import tracejit as tj


def _run_both(f, make):
    """f on a fresh argument, under NumPy and under jit (untiered, tiered), three calls each:
    the results and the argument after the call agree."""
    for tiered in (False, True):
        jitted = tj.jit(f, tiered=tiered)
        for _ in range(3):
            a, b = make(), make()
            want, got = f(a), jitted(b)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(b, a)      # the caller's array, written or not


def _fortran():
    return np.asfortranarray(np.arange(6.0).reshape(2, 3))


def _strided():
    return np.arange(12.0).reshape(2, 6)[:, ::2]


def _write_through_ravel(x):
    y = x.ravel()                    # a copy unless x is C-contiguous
    y[0] = 99.0
    return x.sum() + y.sum()


def _write_through_reshape(x):
    y = x.reshape(-1)                # a view wherever the strides allow
    y[1] = -5.0
    return x * 2


def _write_through_transpose_ravel(x):
    y = x.T.ravel()                  # a view of a Fortran-ordered x
    y[2] = 7.0
    return x + 0


@pytest.mark.parametrize("make", [_fortran, _strided, lambda: np.arange(6.0).reshape(2, 3)],
                         ids=["fortran", "strided", "c"])
@pytest.mark.parametrize("f", [_write_through_ravel, _write_through_reshape,
                               _write_through_transpose_ravel])
def test_writes_through_reshapes_of_an_argument_follow_its_layout(f, make):
    _run_both(f, make)


def test_one_function_called_with_c_then_fortran_then_c_arrays_follows_each_layout():
    jitted = tj.jit(_write_through_ravel, tiered=False)
    for make in (lambda: np.arange(6.0).reshape(2, 3), _fortran,
                 lambda: np.arange(6.0).reshape(2, 3), _fortran, _strided):
        a, b = make(), make()
        assert jitted(b) == _write_through_ravel(a)
        np.testing.assert_array_equal(b, a)


def test_ravel_of_a_strided_view_copies_as_numpy_does():
    def f(x):
        y = x[::2].ravel()           # 1-D but strided: NumPy copies
        y[0] = 5.0
        k = x.T.ravel("K")           # memory order: a view of x
        return x, y, k, x.ravel("F"), x[:, ::-1].ravel("K")
    _run_each(f, np.arange(6.0).reshape(3, 2))


def test_ascontiguousarray_and_asfortranarray_copy_only_what_is_not_laid_out_so():
    def f(x):
        c = np.ascontiguousarray(x.T)        # x.T is not C-contiguous: a copy
        c[0, 0] = -7.0
        same = np.ascontiguousarray(x)       # x is: x itself
        same[1, 1] = -8.0
        fo = np.asfortranarray(x)            # a Fortran-ordered copy
        r = fo.ravel()                       # ... whose ravel is a copy too
        r[0] = -9.0
        return x, c, fo, np.asarray(x.T, order="F"), np.ascontiguousarray(x[0, 0])
    _run_each(f, np.arange(6.0).reshape(2, 3))


def _run_each(f, x):
    for tiered in (False, True):
        got, want = tj.jit(f, tiered=tiered)(x.copy()), f(x.copy())
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_only_a_trace_that_read_a_layout_traces_again_for_another():
    c = np.arange(6.0).reshape(2, 3)
    plain = tj.jit(lambda x: x * 2 + x.T.sum(), tiered=False)
    for x in (c, _fortran(), _strided(), c):
        plain(x)
    assert plain.trace_count == 1           # no view-or-copy decision read the layout
    reads = tj.jit(_write_through_ravel, tiered=False)
    for x in (c.copy(), _fortran(), _fortran(), c.copy(), _strided(), _strided()):
        reads(x)
    assert reads.trace_count == 3           # C, then once per other layout
