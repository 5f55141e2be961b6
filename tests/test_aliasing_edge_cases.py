"""Aliasing at the edges of jit's write-back: NumPy scalar and 0-d array arguments (one
immutable, the other written in place), a written 0-d argument returned, arguments that span
the same memory without sharing an element, and the errors for writes that cannot be done,
which name the line that writes."""
import numpy as np
import pytest

import tracejit
from tracejit.tracer.errors import UnsupportedError

MODES = [pytest.param({}, id="tiered"), pytest.param({"tiered": False}, id="compiled"),
         pytest.param({"backend": "interpreter"}, id="interpreter")]


def _fresh(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _other_name_keeps_the_old_value(s, x):
    t = s
    s += 1.0
    return t * x, s * x


def _rate_read_back_from_the_dict(hp, x):
    lr = hp["lr"]
    lr *= 0.5               # a NumPy scalar rebinds lr; a 0-d array is halved in the dict too
    return hp["lr"] * x


@pytest.mark.parametrize("mode", MODES)
def test_plus_equals_on_a_numpy_scalar_argument_rebinds_so_other_names_keep_its_value(mode):
    for fn, make in [(_other_name_keeps_the_old_value, lambda: np.float64(2.5)),
                     (_rate_read_back_from_the_dict, lambda: {"lr": np.float64(0.1)})]:
        jf = tracejit.jit(fn, **mode)
        for _ in range(3):
            expected, got = fn(make(), np.ones(2)), jf(make(), np.ones(2))
            for e, g in zip(np.atleast_1d(expected), np.atleast_1d(got)):
                np.testing.assert_array_equal(g, e)


def test_one_function_on_numpy_scalars_and_0d_arrays_follows_each_kind():
    """A NumPy scalar and a 0-d array have one cache key; a trace that wrote into one holds for
    its own kind only (the 0-d array is written back, the NumPy scalar is not)."""
    jf = tracejit.jit(_other_name_keeps_the_old_value)
    for s in [np.float64(2.0), np.array(2.0), np.float64(3.0), np.array(3.0)]:
        eager_s = _fresh(s)
        expected = _other_name_keeps_the_old_value(eager_s, np.ones(2))
        got = jf(s, np.ones(2))
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)
        assert type(s) is type(eager_s) and s == eager_s
    assert jf.trace_count == 2
    reader = tracejit.jit(lambda s, x: x * s + s)      # never writes: one trace for both kinds
    for s in [np.float64(2.0), np.array(2.0), np.float64(3.0)]:
        np.testing.assert_array_equal(reader(s, np.ones(2)), np.full(2, 2 * s))
    assert reader.trace_count == 1


def test_writing_into_a_numpy_scalar_argument_is_numpys_type_error():
    def f(s):
        s[...] = 7.0
        return s * 2
    with pytest.raises(TypeError, match="does not support item assignment"):
        f(np.float64(2.5))
    with pytest.raises(TypeError, match=r"does not support item assignment(.|\n)*s\[\.\.\.\] = 7"):
        tracejit.jit(f)(np.float64(2.5))


def test_fill_and_views_of_a_numpy_scalar_argument_leave_it_unchanged_as_in_numpy():
    def f(s):
        s.fill(3.0)                 # NumPy fills a temporary copy
        y = s.reshape(1)            # a new array, not a view
        y[0] = 5.0
        return s * 1, y
    for mode in ({}, {"backend": "interpreter"}):
        got = tracejit.jit(f, **mode)(np.float64(2.5))
        for g, e in zip(got, f(np.float64(2.5))):
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("mode", MODES)
def test_a_written_0d_argument_returned_is_the_callers_array(mode):
    def f(x):
        x += 1.0
        return x
    jf = tracejit.jit(f, **mode)
    for _ in range(3):
        x = np.array(2.5)
        r = jf(x)
        assert r is x and x == 3.5


@pytest.mark.parametrize("mode", MODES)
def test_writing_into_one_of_two_interleaved_views_that_share_no_element_runs_as_numpy(mode):
    def f(even, odd):
        even += odd
        return even.sum()
    jf = tracejit.jit(f, **mode)
    for _ in range(2):
        a, b = np.arange(8.0), np.arange(8.0)
        assert jf(a[::2], a[1::2]) == f(b[::2], b[1::2])
        np.testing.assert_array_equal(a, b)
    a = np.arange(8.0)
    with pytest.raises(ValueError, match="shares memory"):
        jf(a[:4], a[3:7])                 # these do share elements: refused as before


def test_a_refused_write_into_an_argument_names_the_line_that_writes():
    def f(x, y):
        x[1:] = y[:-1]
        return x
    ro = np.arange(4.0)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only(.|\n)*the write: .*\n +x\[1:\] = y\[:-1\]"):
        tracejit.jit(f)(ro, np.ones(4))
    a = np.arange(5.0)
    with pytest.raises(ValueError, match=r"shares memory with another argument, y;(.|\n)*"
                                         r"the write: .*\n +x\[1:\] = y"):
        tracejit.jit(f)(a[:4], a[1:])


def test_a_loop_body_writing_into_its_carry_is_refused_at_that_line_not_as_a_transform():
    def f(x):
        def body(i, acc):
            acc[i] = 2.0 * acc[i]
            return acc
        return tracejit.fori_loop(0, 3, body, x)
    with pytest.raises(UnsupportedError) as info:
        tracejit.jit(f)(np.ones(4))
    msg = str(info.value)
    assert "acc[i] = 2.0 * acc[i]" in msg and "fori_loop" in msg and "grad" not in msg, msg


def test_an_ndarray_attribute_a_traced_array_lacks_is_refused_at_the_users_line():
    def f(x):
        x.flat[::2] = 0.0
        return x
    with pytest.raises(UnsupportedError, match=r"x\.flat(.|\n)*x\.flat\[::2\] = 0\.0") as info:
        tracejit.jit(f)(np.ones(4))
    assert isinstance(info.value, AttributeError)      # hasattr(x, "flat") stays False
    seen = tracejit.jit(lambda x: x + (1.0 if hasattr(x, "strides") else 0.0))(np.zeros(2))
    np.testing.assert_array_equal(seen, [0.0, 0.0])


@pytest.mark.parametrize("mode", MODES)
def test_plus_equals_on_a_0d_array_made_in_the_function_is_seen_through_its_other_names(mode):
    """np.zeros(()) and x.copy() make 0-d arrays, written in place; x.sum() a NumPy scalar,
    rebound."""
    def f(x):
        acc = np.zeros(())
        alias = acc
        for row in x:
            acc += row.sum()
        c = acc.copy()
        c_alias = c
        c *= 2.0
        total = x.sum()
        total_before = total
        total += 1.0
        return alias * 1, c_alias * 1, total_before * 1, total * 1
    x = np.arange(6.0).reshape(3, 2)
    for g, e in zip(tracejit.jit(f, **mode)(x), f(x)):
        np.testing.assert_array_equal(g, e)
