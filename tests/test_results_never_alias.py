"""What a jitted function hands back is the caller's to keep: results are fresh arrays (never
an argument, a program's constant, or another result), in-place operators never silently
rebind, and a traced value cannot be left behind in the caller's objects."""
import numpy as np
import pytest

import tracejit
from tracejit import EscapedTracerError

BACKENDS = ["numba", "interpreter"]

COPIES = {
    "x.copy()": lambda x: x.copy(),
    "np.copy(x)": lambda x: np.copy(x),
    "x.flatten()": lambda x: x.flatten(),
    "x.ravel()": lambda x: x.ravel(),
    "x.astype(x.dtype)": lambda x: x.astype(x.dtype),
    "+x": lambda x: +x,
    "np.concatenate([x])": lambda x: np.concatenate([x]),
    "np.pad(x, 0)": lambda x: np.pad(x, 0),
    "x": lambda x: x,
    "x.reshape(3, 2)": lambda x: x.reshape(3, 2),
    "x.T": lambda x: x.T,
    "x[1:]": lambda x: x[1:],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(COPIES))
def test_a_result_never_shares_memory_with_an_argument(name, backend):
    x = np.arange(6.0).reshape(2, 3)
    y = tracejit.jit(COPIES[name], backend=backend)(x)
    assert not np.shares_memory(x, y)
    y[...] = -1
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_equal_results_are_distinct_arrays(backend):
    a, b = tracejit.jit(lambda x: (x * 2, x * 2), backend=backend)(np.arange(3.0))
    a += 1
    np.testing.assert_array_equal(b, [0.0, 2.0, 4.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_object_returned_twice_is_one_array_as_in_numpy(backend):
    def f(x):
        y = x * 2
        return y, y, x * 2
    a, b, c = tracejit.jit(f, backend=backend)(np.arange(3.0))
    assert a is b and not np.shares_memory(a, c)


def test_a_constant_result_is_a_fresh_array_each_call():
    f = tracejit.jit(lambda x: (x + 1, np.arange(3.0)))
    _, c = f(np.ones(2))
    c[0] = 99
    np.testing.assert_array_equal(f(np.ones(2))[1], [0.0, 1.0, 2.0])


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**=", "@="])
def test_in_place_operators_write_into_the_array_so_other_names_see_it(op):
    """Python's fallback for a missing in-place operator, x = x + y, would leave w holding the
    old value; the write is seen through every name for the array, as in NumPy."""
    src = f"def f(x):\n    z = x * 1\n    w = z\n    z {op} x\n    return w\n"
    scope = {}
    exec(compile(src, "model_code.py", "exec"), scope)
    x = np.eye(2) + 1
    np.testing.assert_allclose(tracejit.jit(scope["f"])(x.copy()), scope["f"](x.copy()))


def test_in_place_add_on_an_argument_updates_the_callers_array():
    def f(a, b):
        a += b
        return a
    a = np.ones(3)
    assert tracejit.jit(f)(a, np.ones(3)) is a
    np.testing.assert_array_equal(a, [2.0, 2.0, 2.0])


def test_accumulating_a_scalar_with_plus_equals_rebinds_as_numpy_scalars_do():
    def f(x):
        total = 0.0
        for row in x:
            total += row.sum()
        return total
    x = np.arange(6.0).reshape(3, 2)
    assert tracejit.jit(f)(x) == 15.0


class _BatchNorm:
    def __init__(self):
        self.w = np.ones(3)
        self.stats = {"mode": "train", "running_mean": 0.0}   # static: holds a string

    @tracejit.jit
    def __call__(self, x):
        self.stats["running_mean"] = x.mean()
        return x * self.w


def test_a_tracer_stored_in_the_callers_container_is_an_error_at_the_call():
    bn = _BatchNorm()
    with pytest.raises(EscapedTracerError, match=r"stats\['running_mean'\].*\n.*test_results"):
        bn(np.arange(3.0))


class _Box:
    def __init__(self):
        self.items = []

    def __hash__(self):
        return 0


def test_a_tracer_appended_to_a_static_arguments_list_is_an_error():
    def f(x, box):
        box.items.append(x * 2)
        return x
    with pytest.raises(EscapedTracerError, match=r"box\.items\[0\]"):
        tracejit.jit(f, static_argnums=1)(np.ones(2), _Box())
