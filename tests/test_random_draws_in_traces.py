"""NumPy's random draws inside a traced function: refused with the line, not a crash (they
call np.empty from compiled code, which used to get a traced array and write into it) and not
numbers frozen at trace time; creation functions called by the user still trace."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.tracer.errors import UnsupportedError


RNG = np.random.default_rng(0)
LEGACY = np.random.RandomState(0)


@pytest.mark.parametrize("draw", [
    lambda: np.random.randn(3),
    lambda: np.random.random(3),
    lambda: RNG.standard_normal(3),
    lambda: LEGACY.normal(size=3),
])
def test_a_random_draw_in_a_jitted_function_is_refused_at_its_line(draw):
    def f(x):
        return x + draw()
    with pytest.raises(UnsupportedError, match="random draw") as e:
        tj.jit(f)(np.zeros(3))
    assert "test_random_draws_in_traces.py" in str(e.value)


def test_a_draw_from_a_generator_made_on_the_line_does_not_crash():
    """Its callee (``default_rng(0).standard_normal``) is not read again (that would call
    default_rng): NumPy's own np.empty serves the draw, its numbers a constant."""
    out = tj.jit(lambda x: x + np.random.default_rng(0).standard_normal(3))(np.zeros(3))
    np.testing.assert_array_equal(out, np.random.default_rng(0).standard_normal(3))


def test_a_draw_outside_passed_in_runs():
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(3)
    np.testing.assert_array_equal(tj.jit(lambda x, n: x + n)(np.zeros(3), noise), noise)


def test_zeros_written_with_traced_values_still_traces():
    def f(x):
        out = np.zeros(3)
        out[1] = x.sum()
        full = np.full((2,), 5.0)
        return out, full, np.zeros_like(x) + x
    x = np.arange(3.0)
    out, full, z = tj.jit(f)(x)
    np.testing.assert_array_equal(out, [0, 3, 0])
    np.testing.assert_array_equal(full, [5, 5])
    np.testing.assert_array_equal(z, x)


def test_a_creation_function_bound_to_another_name_still_traces():
    def f(x):
        make = np.zeros
        out = make(3)
        out[0] = x[0]
        return out
    np.testing.assert_array_equal(tj.jit(f)(np.array([7.0, 1, 2])), [7, 0, 0])


# Code without source (``python -c``, the REPL, ``exec`` of a string): the callee is read from
# the bytecode. Before, the draw's np.empty got a traced array from C code: a segfault.
NO_SOURCE = compile("""
def draw(x):
    return x + np.random.normal(size=x.shape)

def zeros_written(x):
    z = np.zeros((2, x.shape[0])); z[1] = x * 2
    return z
""", "<string>", "exec")


def test_code_without_source_still_refuses_a_draw_and_traces_its_zeros():
    space = {"np": np}
    exec(NO_SOURCE, space)
    with pytest.raises(UnsupportedError, match="random draw"):
        tj.jit(space["draw"])(np.zeros(3))
    np.testing.assert_array_equal(tj.jit(space["zeros_written"])(np.ones(3)),
                                  [[0, 0, 0], [2, 2, 2]])
