"""Aliasing bugs found by hunting (helper: aliasing, in-place writes, buffer reuse): each test
is the smallest program that went wrong, checked against NumPy running the same function."""
import re

import numpy as np
import pytest

import tracejit

MODES = [pytest.param({"backend": "interpreter"}, id="interpreter"),
         pytest.param({}, id="compiled")]


def _check(fn, *make, mode):
    """``fn`` jitted gives NumPy's results and leaves its arguments as NumPy does, twice."""
    jf = tracejit.jit(fn, **mode)
    for _ in range(2):
        args, expected_args = [m() for m in make], [m() for m in make]
        expected, got = fn(*expected_args), jf(*args)
        if not isinstance(expected, tuple):
            expected, got = (expected,), (got,)
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_array_equal(g, e)
        for e, g in zip(expected_args, args):
            np.testing.assert_array_equal(g, e)


def _square():
    return np.arange(9.0).reshape(3, 3)


def _diag_before_a_write_into_the_argument(x):
    d = np.diag(x)
    x[0, 0] = 100.0
    return d * 1


def _diag_before_a_write_into_an_intermediate(x):
    y = x * 2
    d = np.diag(y, 1)
    y[0, 1] = -5.0
    return d.sum()


@pytest.mark.parametrize("mode", MODES)
def test_np_diag_of_a_2d_array_is_a_view_that_sees_later_writes(mode):
    # np.diag of a 2-d array is np.diagonal's view: it was traced as a copy (stale values)
    _check(_diag_before_a_write_into_the_argument, _square, mode=mode)
    _check(_diag_before_a_write_into_an_intermediate, _square, mode=mode)


def test_writing_into_np_diag_of_a_2d_array_is_numpys_read_only_error():
    def f(x):
        d = np.diag(x)
        d[0] = 5.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        f(_square())
    with pytest.raises(ValueError, match="read-only"):
        tracejit.jit(f, backend="interpreter")(_square())


def test_np_diag_of_a_1d_array_is_still_a_new_writeable_array():
    def f(v):
        d = np.diag(v)
        d[0, 1] = 7.0
        return d, v

    _check(f, lambda: np.arange(3.0), mode={"backend": "interpreter"})


def _returns_the_diagonal_of_an_array_written_after(x):
    y = x * 1
    d = np.diagonal(y)
    y[0, 0] = 50.0
    return d


def _stores_the_diagonal_of_an_array_written_after(x, out):
    d = np.diagonal(x)
    x[1, 1] = -1.0
    out["diag"] = d
    return None


@pytest.mark.parametrize("mode", MODES)
def test_a_returned_diagonal_of_an_array_written_after_it_is_its_new_diagonal(mode):
    # the stale read-only view was brought up to date after the trace had finished:
    # EscapedTracerError
    _check(_returns_the_diagonal_of_an_array_written_after, _square, mode=mode)
    jf = tracejit.jit(_stores_the_diagonal_of_an_array_written_after, **mode)
    x, out = _square(), {}
    jf(x, out)
    np.testing.assert_array_equal(out["diag"], [0.0, -1.0, 8.0])
    np.testing.assert_array_equal(x[1, 1], -1.0)


class _Holder:
    def __init__(self):
        self.W = np.arange(4.0)
        self.count = np.zeros(1)

    def step(self, x):
        self.count[0] += 1          # Python does it on the array itself: once, at trace time
        return self.W * x


_cfg = _Holder()
_tables = {"W": np.arange(4.0)}


def _scaled_then_reset(x):
    y = _cfg.W * x
    _cfg.W[1] = 7.0                 # the program read W after this write: y was [0, 7, 2, 3]
    return y


def _scaled_then_reset_in_a_dict(x):
    y = _tables["W"] * x
    _tables["W"][...] = 0.0
    return y


@pytest.mark.parametrize("fn, label", [(_scaled_then_reset, "_cfg.W"),
                                       (_scaled_then_reset_in_a_dict, "_tables['W']")])
def test_a_write_into_an_array_held_by_a_global_object_or_dict_is_refused(fn, label):
    # as a write into a global array is: it ran once at trace time, on the array itself, and
    # the ops before it read the written array
    with pytest.raises(tracejit.UnsupportedError, match=rf"writes into {re.escape(label)}, an array it "
                                                        "reads from outside itself"):
        tracejit.jit(fn, backend="interpreter")(np.ones(4))


def test_a_write_into_self_of_a_jitted_bound_method_is_refused():
    # jit(obj.step) reaches self's arrays from outside (a decorated method takes self as an
    # argument and writes back): the count went up once, not at every call
    with pytest.raises(tracejit.UnsupportedError, match=r"writes into self\.count"):
        tracejit.jit(_Holder().step, backend="interpreter")(np.ones(4))


def test_reading_arrays_held_by_a_global_object_sees_their_changes_in_place():
    def f(x):
        return _cfg.W * x + _tables["W"]

    jf = tracejit.jit(f, backend="interpreter")
    for k in range(3):
        _cfg.W[:] = k
        _tables["W"][:] = -k
        np.testing.assert_array_equal(jf(np.ones(4)), np.zeros(4))


def test_arrays_of_python_objects_held_by_a_global_object_do_not_stop_the_trace():
    holder = _Holder()
    holder.names = np.array(["a", None], dtype=object)
    holder.labels = np.array(["ab", "c"])

    def f(x):
        return x * holder.W

    np.testing.assert_array_equal(tracejit.jit(f, backend="interpreter")(np.ones(4)),
                                  np.arange(4.0))


def _sum_of_both(x, y):
    return (x + y).sum()


@pytest.mark.parametrize("transform", [
    lambda: tracejit.grad(_sum_of_both, argnums=(0, 1)),
    lambda: tracejit.jit(tracejit.grad(_sum_of_both, argnums=(0, 1)), backend="interpreter"),
    lambda: lambda x, y: tracejit.value_and_grad(_sum_of_both, argnums=(0, 1))(x, y)[1],
    lambda: lambda x, y: tracejit.vjp(lambda a, b: a + b, x, y)[1](np.ones(3)),
], ids=["grad", "jit_grad", "value_and_grad", "vjp"])
def test_gradients_of_two_arguments_with_one_value_are_separate_arrays(transform):
    # d(x + y) is one cotangent for both: it came back as one array twice, so scaling each
    # gradient in place (clipping) scaled it twice
    gx, gy = transform()(np.ones(3), np.ones(3))
    for g in (gx, gy):
        g *= 0.5
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 0.5])


def test_gradients_of_two_leaves_of_a_dict_with_one_value_are_separate_arrays():
    g = tracejit.grad(lambda p: (p["a"] + p["b"]).sum())({"a": np.ones(2), "b": np.ones(2)})
    assert not np.shares_memory(g["a"], g["b"])


def _write_into_an_unstacked_row(x):
    a, b = np.unstack(x)
    b[0] = 99.0                     # a view in NumPy: reaches x
    x[0, 2] = -1.0                  # and a later write into x reaches a
    return x, a


def _write_into_astype_without_a_copy(x):
    v = np.astype(x, x.dtype, copy=False)      # x itself in NumPy
    v[0, 0] = 99.0
    return x


def _write_into_real_if_close(x):
    v = np.real_if_close(x)                     # x itself for a real x
    v[1, 1] = 99.0
    return x


@pytest.mark.parametrize("fn", [_write_into_an_unstacked_row, _write_into_astype_without_a_copy,
                                _write_into_real_if_close])
def test_numpy_functions_that_return_views_or_the_array_itself_share_its_memory(fn):
    # they were traced as copies: writes through them did not reach the argument
    _check(fn, lambda: np.arange(6.0).reshape(2, 3), mode={"backend": "interpreter"})


def test_astype_function_with_a_copy_or_another_dtype_is_a_new_array():
    def f(x):
        a = np.astype(x, x.dtype)
        b = np.astype(x, np.float32, copy=False)
        a[0, 0] = 99.0
        b[0, 1] = 99.0
        return x, a, b

    _check(f, lambda: np.arange(6.0).reshape(2, 3), mode={"backend": "interpreter"})


def _scaled_by_a_default(x, w=np.ones(3), *, b=np.zeros(3)):
    return x * w + b


def _counts_in_a_default(x, calls=np.zeros(1)):
    calls[0] += 1                   # NumPy counts every call: the trace counted once
    return x * calls[0]


def test_a_default_argument_array_changed_in_place_is_seen_as_a_global_is():
    # it was baked into the program as a constant: the change was not seen
    jf = tracejit.jit(_scaled_by_a_default, backend="interpreter")
    w, b = _scaled_by_a_default.__defaults__[0], _scaled_by_a_default.__kwdefaults__["b"]
    for k in range(3):
        w[:], b[:] = k, -k
        np.testing.assert_array_equal(jf(np.full(3, 2.0)), np.full(3, float(k)))
    w[:], b[:] = 1.0, 0.0


def test_a_write_into_a_default_argument_array_is_refused():
    with pytest.raises(tracejit.UnsupportedError, match=r"writes into calls \(the default of "):
        tracejit.jit(_counts_in_a_default, backend="interpreter")(np.ones(2))
