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


def test_np_asarray_of_a_traced_value():
    def f(x):
        return np.asarray(x) + 1

    msg = raises_at(TypeError, f, x3(), line=line_of(f))
    assert "np.asarray" in msg and "drop the conversion" in msg


def test_item_of_a_traced_value():
    def f(x):
        return x.sum().item()

    raises_at(ConcretizationError, f, x3(), line=line_of(f))


# --- unsupported NumPy -----------------------------------------------------------------------


@pytest.mark.parametrize("name,call", [
    ("np.sort", lambda x: np.sort(x)),
    ("np.cumsum", lambda x: np.cumsum(x)),
    ("np.linalg.inv", lambda x: np.linalg.inv(x.reshape(1, 3) * x.reshape(3, 1))),
    ("np.argsort", lambda x: np.argsort(x)),
    ("np.add.accumulate", lambda x: np.add.accumulate(x)),
    ("np.nextafter", lambda x: np.nextafter(x, 1)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_numpy_function_is_a_type_error_naming_it(name, call):
    with pytest.raises(UnsupportedError) as info:
        jit(call)(x3())
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    assert name in msg and "not supported" in msg and f"{HERE}:" in msg


def test_cumsum_method_names_np_cumsum():
    def f(x):
        return x.cumsum()

    assert "np.cumsum" in raises_at(UnsupportedError, f, x3(), line=line_of(f))


def test_out_keyword_is_rejected_with_a_fix():
    def f(x):
        return np.exp(x, out=x)

    msg = raises_at(UnsupportedError, f, x3(), line=line_of(f))
    assert "out=" in msg and "assign the result" in msg


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


def test_in_place_assignment():
    def f(x):
        x[0] = 1
        return x

    msg = raises_at(UnsupportedError, f, x3(), line=line_of(f))
    assert "x[i] = v" in msg and "np.where" in msg


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


def test_string_argument_names_the_argument_and_suggests_static():
    f = jit(lambda x, activation: x)
    call_line = line_of(test_string_argument_names_the_argument_and_suggests_static, 4)
    with pytest.raises(TypeError) as info:
        f(x3(), "relu")
    msg = str(info.value)
    assert "activation" in msg and "str" in msg and "static_argnames" in msg
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
        jit(lambda x: np.sort(x))(x3())
