"""Tracing errors point at the user's code (this file, the offending line) and say what to do."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tracejit
from tracejit import (ConcretizationError, EscapedTracerError, UnsupportedError, jit)

HERE = os.path.basename(__file__)


def x3():
    return np.arange(3, dtype=np.float32)


def line_of(fn, offset=1):
    """The line ``offset`` lines below ``def`` in ``fn``'s source."""
    return fn.__code__.co_firstlineno + offset


def raises_at(exc, fn, *args, line, **kwargs):
    """Calling jit(fn) raises ``exc`` naming this file and ``line``; returns the message."""
    with pytest.raises(exc) as info:
        jit(fn)(*args, **kwargs)
    msg = str(info.value)
    assert f"{HERE}:{line}" in msg, msg
    return msg


# --- traced values where Python needs concrete ones -------------------------------------------


def test_if_on_a_traced_value_names_the_line_and_suggests_static_or_where():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    msg = raises_at(TypeError, f, x3(), line=line_of(f))
    assert "condition" in msg and "static_argnums" in msg and "np.where" in msg
    assert "if x.sum() > 0:" in msg                    # the source line itself is quoted


@pytest.mark.parametrize("convert", [float, int, bool], ids=lambda c: c.__name__)
def test_python_conversion_of_a_traced_value(convert):
    def f(x):
        return x * convert(x[0])

    msg = raises_at(ConcretizationError, f, x3(), line=line_of(f))
    assert "static_argnums" in msg
    assert isinstance(pytest.raises(TypeError, jit(f), x3()).value, TypeError)


def test_traced_value_as_a_shape_in_np_zeros():
    def f(x, n):
        return np.zeros(n) + x

    msg = raises_at(ConcretizationError, f, x3(), 3, line=line_of(f))
    assert "shape" in msg and "static_argnums" in msg


def test_traced_value_as_a_shape_in_reshape():
    def f(x):
        return x.reshape(x.shape[0], x[0].astype(np.int64))

    msg = raises_at(ConcretizationError, f, x3(), line=line_of(f))
    assert "static_argnums" in msg


def test_traced_value_as_a_slice_bound():
    def f(x, k):
        return x[:k]

    raises_at(ConcretizationError, f, x3(), 2, line=line_of(f))


def test_static_argnums_fixes_the_shape_error():
    """The fix the message suggests works."""
    f = jit(lambda x, n: np.zeros(n) + x.sum(), static_argnums=1)
    assert f(x3(), 4).shape == (4,)


def test_np_asarray_of_a_traced_value_is_the_value():
    def f(x):
        return np.asarray(x) + 1
    np.testing.assert_array_equal(jit(f)(x3()), x3() + 1)


def test_tolist_of_a_traced_value_says_to_drop_the_conversion():
    def f(x):
        return np.array(x.tolist())

    msg = raises_at(TypeError, f, x3(), line=line_of(f))
    assert "tolist" in msg and "drop the conversion" in msg


def test_item_of_a_traced_value():
    def f(x):
        return x.sum().item()

    raises_at(ConcretizationError, f, x3(), line=line_of(f))


# --- unsupported NumPy -----------------------------------------------------------------------


@pytest.mark.parametrize("name,call", [
    ("np.unique", lambda x: np.unique(x)),
    ("np.nonzero", lambda x: np.nonzero(x)),
    ("np.linalg.eig", lambda x: np.linalg.eig(x.reshape(1, 3) * x.reshape(3, 1))),
    ("np.argwhere", lambda x: np.argwhere(x)),
    ("np.logaddexp.accumulate", lambda x: np.logaddexp.accumulate(x)),
    ("np.nextafter", lambda x: np.nextafter(x, 1)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_numpy_function_is_a_type_error_naming_it(name, call):
    with pytest.raises(UnsupportedError) as info:
        jit(call)(x3())
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    assert name in msg and "not supported" in msg and f"{HERE}:" in msg


def test_unknown_ufunc_keyword_is_named():
    def f(x):
        return np.add(x, 1, where=x > 0)

    assert "where" in raises_at(UnsupportedError, f, x3(), line=line_of(f))


def test_traced_boolean_mask_indexing():
    def f(x):
        return x[x > 0]

    msg = raises_at(UnsupportedError, f, x3(), line=line_of(f))
    assert "boolean mask" in msg and "np.where" in msg


def test_constant_boolean_mask_indexing_is_fine():
    mask = np.array([True, False, True])
    np.testing.assert_allclose(jit(lambda x: x[mask])(x3()), x3()[mask])


def test_writing_a_traced_value_into_an_array_made_inside_is_a_traced_write():
    def f(x):
        h = np.zeros(3)
        h[0:2] = x[:2]
        return h
    np.testing.assert_array_equal(jit(f)(x3()), f(x3()))


def test_writing_a_traced_value_into_a_numpy_array_from_outside_says_to_make_it_traced():
    def f(x):
        h = np.array([0.0, 0.0, 0.0])      # a NumPy array: np.array of a list is not traced
        h[0:2] = x[:2]
        return h

    msg = raises_at(ConcretizationError, f, x3(), line=line_of(f, 2))
    assert "NumPy array" in msg and "np.zeros_like(x)" in msg


# --- arguments -------------------------------------------------------------------------------


def test_unhashable_static_argument_is_a_clear_error_not_a_cache_miss():
    f = jit(lambda x, sizes: x[: sizes[0]], static_argnums=1)
    call_line = line_of(test_unhashable_static_argument_is_a_clear_error_not_a_cache_miss, 4)
    with pytest.raises(TypeError) as info:
        f(x3(), [2, 1])
    msg = str(info.value)
    assert "sizes" in msg and "unhashable" in msg and "tuple" in msg
    assert f"{HERE}:{call_line}" in msg
    assert f(x3(), (2, 1)).shape == (2,)                # the suggested fix works


def test_function_argument_names_the_argument_and_suggests_static():
    # (a string is a static value without being marked: tests/test_static_leaves.py)
    f = jit(lambda x, activation: x)
    call_line = line_of(test_function_argument_names_the_argument_and_suggests_static, 5)
    with pytest.raises(TypeError) as info:
        f(x3(), np.tanh)
    msg = str(info.value)
    assert "activation" in msg and "ufunc" in msg and "static_argnames" in msg
    assert f"{HERE}:{call_line}" in msg


def test_non_array_inside_a_pytree_names_its_path():
    with pytest.raises(TypeError, match=r"params\['act'\]"):
        jit(lambda params: params["w"])({"w": x3(), "act": object()})


# --- escaped tracers -------------------------------------------------------------------------


def test_tracer_stored_in_a_global_and_used_eagerly_later():
    saved = []

    def f(x):
        saved.append(x * 2)
        return x
    created = line_of(f)

    jit(f)(x3())
    with pytest.raises(EscapedTracerError) as info:
        np.exp(saved[0])
    msg = str(info.value)
    assert f"created at {__file__}:{created}" in msg
    assert "saved.append(x * 2)" in msg and "return the value" in msg


def test_tracer_from_a_closure_used_in_a_later_call():
    box = {}

    @jit
    def remember(x):
        box["t"] = x + 1
        return x
    created = line_of(remember.fn, 2)       # co_firstlineno is the decorator line

    @jit
    def use(y):
        return y * box["t"]

    remember(x3())
    with pytest.raises(EscapedTracerError) as info:
        use(x3())
    assert f"{HERE}:{created}" in str(info.value)


# --- shapes ----------------------------------------------------------------------------------


def test_broadcast_shape_mismatch_is_a_value_error_naming_the_line():
    def f(x, y):
        return x + y

    msg = raises_at(ValueError, f, x3(), np.ones(4, np.float32), line=line_of(f))
    assert "(3,)" in msg and "(4,)" in msg


def test_matmul_core_dimension_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="mismatch"):
        jit(lambda a, b: a @ b)(np.ones((2, 3)), np.ones((4, 2)))


def test_bad_reshape_is_a_value_error():
    with pytest.raises(ValueError, match="cannot reshape"):
        jit(lambda x: x.reshape(2, -1))(x3())


def test_errors_are_tracer_errors_that_can_be_caught_together():
    with pytest.raises(tracejit.TracerError):
        jit(lambda x: np.nextafter(x, 1))(x3())


def interp(fn):
    return jit(fn, backend="interpreter")


@pytest.mark.parametrize("name,fn,args,shapes", [
    ("matmul", lambda a, b: a @ b, (np.ones((2, 3)), np.ones((4, 2))), ["(2, 3)", "(4, 2)"]),
    ("dot", lambda a, b: np.dot(a, b), (np.ones((2, 3)), np.ones((4, 2))), ["(2, 3)", "(4, 2)"]),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=([1], [0])),
     (np.ones((2, 3)), np.ones((4, 2))), ["(2, 3)", "(4, 2)"]),
    ("reshape", lambda a, b: a.reshape(4, 2) + b, (np.ones((2, 3)), 1.0), ["(2, 3)", "(4, 2)"]),
    ("concatenate", lambda a, b: np.concatenate([a, b]), (np.ones((2, 3)), np.ones((4, 2))),
     ["(2, 3)", "(4, 2)"]),
    ("concatenate ndim", lambda a, b: np.concatenate([a, b]), (np.ones((2, 3)), np.ones(4)),
     ["(2, 3)", "(4,)"]),
    ("stack", lambda a, b: np.stack([a, b]), (np.ones((2, 3)), np.ones((4, 2))),
     ["(2, 3)", "(4, 2)"]),
    ("broadcast_to", lambda a, b: np.broadcast_to(a, (4, 2)) + b, (np.ones((2, 3)), 1.0),
     ["(2, 3)", "(4, 2)"]),
    ("transpose", lambda a, b: a.transpose(0, 0) + b, (np.ones((2, 3)), 1.0), ["(2, 3)"]),
    ("take_along_axis", lambda a, b: np.take_along_axis(a, b, 1),
     (np.ones((2, 3)), np.zeros(2, np.int64)), ["(2, 3)", "(2,)"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_shape_errors_name_the_line_and_the_shapes(name, fn, args, shapes):
    """matmul's said neither: "matmul: Input operand 1 has a mismatch in its core dimension"."""
    with pytest.raises(ValueError) as info:
        jit(fn)(*args)
    msg = str(info.value)
    assert f"{HERE}:" in msg and all(s in msg for s in shapes), msg


def test_axis_out_of_range_is_numpys_axis_error_naming_the_line():
    def f(x):
        return x.sum(axis=2)

    msg = raises_at(np.exceptions.AxisError, f, x3(), line=line_of(f))
    assert "axis 2 is out of bounds for array of dimension 1" in msg


# --- reductions over empty axes --------------------------------------------------------------


@pytest.mark.parametrize("call,numpy_says", [
    (lambda x: x.max(axis=0), "zero-size array to reduction operation maximum"),
    (lambda x: np.min(x), "zero-size array to reduction operation minimum"),
    (lambda x: np.argmax(x, axis=0), "argmax of an empty sequence"),
    (lambda x: x.argmin(), "argmin of an empty sequence"),
], ids=["max", "min", "argmax", "argmin"])
def test_reduction_without_identity_over_an_empty_axis_names_the_line(call, numpy_says):
    empty = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError, match=numpy_says):
        call(empty)
    with pytest.raises(ValueError) as info:
        jit(call)(empty)
    msg = str(info.value)
    assert numpy_says in msg and f"{HERE}:" in msg and "(0, 3)" in msg


def test_max_with_initial_gives_empty_axes_a_value_as_numpy():
    for x in (np.zeros((0, 3)), np.arange(6.0).reshape(2, 3)):
        for f in (lambda x: np.max(x, axis=0, initial=-1.0),
                  lambda x: np.min(x, axis=0, initial=4, keepdims=True)):
            got = interp(f)(x)
            np.testing.assert_array_equal(got, f(x))
            assert got.dtype == f(x).dtype


@pytest.mark.parametrize("fn", [np.all, np.any])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_all_and_any_of_an_empty_axis_are_true_and_false_as_in_numpy(fn, axis):
    x = np.zeros((0, 3))
    got = interp(lambda x: fn(x > 0, axis=axis))(x)
    np.testing.assert_array_equal(got, fn(x > 0, axis=axis))
    assert got.shape == fn(x > 0, axis=axis).shape


# --- gathers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda x: np.take(x, [0, 5]),
    lambda x: x[[0, 5]],
    lambda x: x[np.array([-4])],
    lambda x: x.reshape(1, 3)[[0], [3]],
], ids=["np.take", "list index", "negative", "2-d"])
def test_constant_gather_index_out_of_range_fails_at_trace_time_naming_the_line(call):
    with pytest.raises(IndexError):
        call(x3())
    with pytest.raises(IndexError) as info:
        jit(call)(x3())
    msg = str(info.value)
    assert "out of bounds" in msg and f"{HERE}:" in msg


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
@pytest.mark.parametrize("index", [(1, 5), (-4, 0), (3, 0)], ids=str)
def test_traced_2d_gather_out_of_range_raises_not_another_element(backend, index):
    """x[i, j] is a gather along the merged axes at i * 4 + j: x[1, 5] read x[2, 1]."""
    x = np.arange(12.0).reshape(3, 4)
    i, j = (np.array([v]) for v in index)
    with pytest.raises(IndexError):
        x[i, j]
    with pytest.raises(IndexError):
        jit(lambda x, i, j: x[i, j], backend=backend)(x, i, j)


@pytest.mark.parametrize("backend", ["interpreter", "numba"])
def test_traced_index_below_minus_n_raises_not_counted_from_the_end_twice(backend):
    f = jit(lambda x, i: np.take(x, i), backend=backend)
    np.testing.assert_array_equal(f(x3(), np.array([-3, 2])), x3()[[-3, 2]])
    with pytest.raises(IndexError):
        f(x3(), np.array([-4]))


def test_traced_gather_out_of_range_in_a_kernel_names_the_line():
    def f(x, i):
        return x[i] * 2

    with pytest.raises(IndexError) as info:
        jit(f)(x3(), np.array([0, 7]))
    assert f"{HERE}:{line_of(f)}" in str(info.value) and "out of bounds" in str(info.value)


def test_traced_list_of_indices_is_an_index_array():
    x = np.arange(5.0)
    got = interp(lambda x, i, j: x[[i, j]])(x, np.int64(1), np.int64(-1))
    np.testing.assert_array_equal(got, x[[1, -1]])


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("traced", [False, True], ids=["constant", "traced"])
def test_take_clip_and_wrap_follow_numpy(mode, axis, traced):
    """The mode was ignored: out-of-range indices raised instead of being clipped/wrapped."""
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 5], [-7, 2]])
    expected = np.take(x, idx, axis=axis, mode=mode)
    if traced:
        got = interp(lambda x, i: np.take(x, i, axis=axis, mode=mode))(x, idx)
    else:
        got = interp(lambda x: np.take(x, idx, axis=axis, mode=mode))(x)
    np.testing.assert_array_equal(got, expected)


# --- lists of traced values given to NumPy functions -----------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_numpy_function_of_a_list_of_tracers_says_to_stack(name):
    """NumPy converts the list itself; the message said "drop the conversion", which the user
    never wrote."""
    fn = getattr(np, name)

    def f(a, b):
        return fn([a, b], axis=0)

    msg = raises_at(TypeError, f, x3(), x3(), line=line_of(f))
    assert f"np.{name}" in msg and "np.stack([a, b])" in msg and "drop the conversion" not in msg
    np.testing.assert_array_equal(interp(lambda a, b: fn(np.stack([a, b]), axis=0))(x3(), x3()),
                                  fn([x3(), x3()], axis=0))


# --- out= ------------------------------------------------------------------------------------


def _out_parameter(func):
    """NumPy's ``out`` parameter of ``func`` (read independently of tracejit's check)."""
    import inspect
    return inspect.signature(func).parameters.get("out")


def _functions_with_out():
    from tracejit.tracer.numpy.dispatch import FUNCTIONS
    return [f for f, impl in FUNCTIONS.items() if impl is not None
            and _out_parameter(f) is not None]


def _call_with_out(func, t, out, positional):
    """func called with the traced ``t`` for every required argument, and ``out``."""
    import inspect
    params = list(inspect.signature(func).parameters.values())
    args = []
    for p in params:
        if p.name == "out":
            break
        if p.kind is p.VAR_POSITIONAL:             # einsum(*operands, out=...)
            args += ["i->", t]
            break
        if p.default is p.empty:
            args.append([t, t] if p.name == "arrays" else t)
        elif positional:
            args.append(p.default)
    return func(*args, out) if positional and params[len(args)].name == "out" else func(
        *args, out=out)


def test_the_out_parameter_check_sees_numpys_signatures():
    names = {f.__name__ for f in _functions_with_out()}
    assert {"sum", "clip", "dot", "concatenate", "outer", "take", "einsum"} <= names


def _eager_with_out(func, positional):
    with np.errstate(all="ignore"):
        return _call_with_out(func, x3(), None, positional)


def _callable_with_arrays(func) -> bool:
    try:
        _eager_with_out(func, False)
        return True
    except (TypeError, ValueError, IndexError):
        return False        # np.take(x, x): float indices; np.trace of a vector


@pytest.mark.parametrize("positional", [False, True], ids=["keyword", "positional"])
@pytest.mark.parametrize("func", [f for f in _functions_with_out() if _callable_with_arrays(f)
                                  # (a traced condition: a data-dependent size, refused)
                                  and f is not np.compress],
                         ids=lambda f: f.__name__)
def test_every_function_with_out_writes_into_it(func, positional):
    """np.clip(g, -5, 5, out=g) once left g unclipped; np.dot, np.concatenate, np.outer dropped
    out= too. Every table entry whose NumPy function has ``out`` (and can be called with one
    array for each required argument) writes its result into a traced ``out`` and returns it,
    as NumPy does."""
    if positional and not _positional_out(func):
        pytest.skip("out is keyword-only")
    expected = np.asarray(_eager_with_out(func, positional))
    out_dtype = np.float64 if expected.dtype.kind == "f" else expected.dtype

    def f(x, out):
        r = _call_with_out(func, x, out, positional)
        return r is out, out

    out = np.zeros(expected.shape, out_dtype)
    same, got = interp(f)(x3(), out)
    assert same
    np.testing.assert_allclose(got, expected.astype(out_dtype), rtol=1e-6)
    np.testing.assert_allclose(out, expected.astype(out_dtype), rtol=1e-6)


@pytest.mark.parametrize("func", [np.sum, np.clip, np.dot], ids=lambda f: f.__name__)
def test_out_that_is_a_numpy_array_from_outside_is_refused_naming_the_fix(func):
    def f(x):
        return _call_with_out(func, x, np.array([0.0, 0.0, 0.0]), False)

    with pytest.raises(UnsupportedError) as info:
        jit(f)(x3())
    msg = str(info.value)
    assert "out=a NumPy array" in msg and "np.zeros_like" in msg and f"{HERE}:" in msg


def test_out_that_is_an_array_made_inside_is_written_as_numpy_writes_it():
    def f(x):
        out = np.zeros(())
        r = np.sum(x, out=out)
        return r, out
    for got, want in zip(jit(f)(x3()), f(x3())):
        np.testing.assert_allclose(got, want)


def _positional_out(func):
    return _out_parameter(func).kind is not _out_parameter(func).KEYWORD_ONLY


def test_out_none_is_fine():
    got = interp(lambda g: np.clip(g, 0.5, 1.5, out=None))(x3())
    np.testing.assert_array_equal(got, np.clip(x3(), 0.5, 1.5))


@pytest.mark.parametrize("call", [
    lambda a, b: np.concatenate([a, b], dtype=np.float32),
    lambda a, b: np.stack([a, b], axis=1, dtype=np.int64, casting="unsafe"),
    lambda a, b: np.hstack([a, b], dtype=np.float32),
], ids=["concatenate", "stack", "hstack"])
def test_joining_with_a_dtype_returns_that_dtype(call):
    a, b = np.ones(2), np.arange(2)
    got = interp(call)(a, b)
    assert got.dtype == call(a, b).dtype
    np.testing.assert_array_equal(got, call(a, b))


def test_joining_with_a_dtype_the_casting_rule_forbids_is_numpys_type_error():
    def f(a, b):
        return np.concatenate([a, b], dtype=np.int64)

    raises_at(TypeError, f, np.ones(2), np.arange(2), line=line_of(f))
