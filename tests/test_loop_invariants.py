"""Values that do not depend on a kernel's loops are computed once, before them: NumPy computes
``np.tanh(a[i, i])`` once, and a kernel that broadcast it into its loop nest used to compute it
for every element (NPBench's go_fast: 2900x slower than NumPy)."""
import numpy as np

import tracejit
from tracejit.driver import compile_function
from tracejit.ir import interpret, parse


def _go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def _loop_lines(source: str) -> list:
    """The kernel lines from its first loop on."""
    lines = source.split("def kernel(", 1)[1].splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("for "))
    return lines[first:]


def test_work_on_scalars_of_the_arguments_runs_once_before_the_loops():
    a = np.random.default_rng(0).random((30, 30))
    f = tracejit.jit(_go_fast, tiered=False)
    np.testing.assert_allclose(f(a), _go_fast(a), rtol=1e-12)
    loops = _loop_lines(f.lower(a).source)
    assert not any("tanh" in line for line in loops)


def test_scalar_arguments_and_constants_are_combined_once():
    def scaled(x, lr, t):
        return x * (lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t))
    x = np.linspace(-1, 1, 64).reshape(8, 8)
    args = (x, np.float64(0.01), np.float64(3.0))
    f = tracejit.jit(scaled, tiered=False)
    np.testing.assert_allclose(f(*args), scaled(*args), rtol=1e-12)
    assert not any("sqrt" in line for line in _loop_lines(f.lower(*args).source))


def test_values_that_depend_on_the_loop_stay_in_it():
    def row_softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    x = np.random.default_rng(1).standard_normal((16, 33))
    f = tracejit.jit(row_softmax, tiered=False)
    np.testing.assert_allclose(f(x), row_softmax(x), rtol=1e-12)


def test_a_value_of_the_rows_alone_is_computed_once_per_row():
    def f(v, x):
        return np.tanh(v)[:, None] + x
    v, x = np.linspace(-2, 2, 40), np.ones((40, 50))
    jf = tracejit.jit(f, tiered=False)
    np.testing.assert_allclose(jf(v, x), f(v, x), rtol=1e-12)
    lines = _loop_lines(jf.lower(v, x).source)
    inner = next(i for i, line in enumerate(lines) if line.strip().startswith("for i1"))
    assert any("tanh" in line for line in lines[:inner])       # in the row loop
    assert not any("tanh" in line for line in lines[inner:])   # not per element


def test_an_accumulator_is_updated_in_the_innermost_loop_even_over_no_axes():
    # Found by the random-program suite: a reduction over no axes keeps its accumulator in the
    # loop nest; placing its start in an outer loop carried a running max along the rows.
    fn = parse("""
    func @f(%a: f64[2,3,3], %b: bool[2,3,3], %c: f64[2,3,3]) -> (f64[2,3,3]) {
      %0 = where %b, %a, %c : f64[2,3,3]
      %1 = reduce_max %0 axes=[] : f64[2,3,3]
      return %1
    }""")
    rng = np.random.default_rng(2)
    args = [rng.standard_normal((2, 3, 3)), rng.random((2, 3, 3)) > 0.5,
            np.full((2, 3, 3), -0.5)]
    (got,) = compile_function(fn, "numba", tiered=False)(args)
    np.testing.assert_array_equal(got, interpret(fn, args)[0])
