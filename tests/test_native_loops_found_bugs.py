"""Bugs found in native loop modules (codegen/loops.py, codegen/control.py): carries that take
over a body kernel's buffer, and matmul groups adding to a carry in place. Each case against
the reference interpreter and eager NumPy, on small shapes."""
import numpy as np

import tracejit as tj
from tracejit.driver import compile_function
from tracejit.ir import Builder, TensorType, as_dtype, interpret, ops

rng = np.random.default_rng(0)
C = rng.standard_normal((3, 4))


def check(f, *args):
    want = tj.jit(f, backend="interpreter")(*args)
    for got in (tj.jit(f, tiered=False)(*args), f(*args)):
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [] if x is None else [x]


def test_inner_loop_carrying_an_outer_kernel_output_leaves_that_buffer_alone():
    # The inner carry's next value is t, a buffer the outer body's kernel writes: the inner
    # loop took it over and swapped its name with a spare, so the outer body read garbage
    def f(c):
        def outer(i, c):
            t = np.tanh(c) * 2.0
            g = tj.fori_loop(0, 3, lambda j, g: t, np.zeros_like(c))
            return g + t * 0.5
        return tj.fori_loop(0, 3, outer, c)
    check(f, C)


def test_inner_scan_returning_an_outer_value_as_its_carry():
    def f(c, xs):
        def outer(c, x):
            t = np.tanh(c) + x
            g, ys = tj.scan(lambda g, _: (t, g.sum()), c, None, length=2)
            return g * t, ys
        return tj.scan(outer, c, xs)
    check(f, C, rng.standard_normal((4, 3, 4)))


def test_two_carries_never_share_a_buffer_updated_in_place():
    # scan body (a, c, d, x) -> (n, barrier(n), tanh(d)), n = c + x @ a: the barrier names n's
    # buffer, which the matmul kernel updates in place, so d took the same buffer as c and
    # the next update changed d before tanh(d) read it
    f64 = as_dtype("float64")
    t, tx = TensorType(f64, (2, 3)), TensorType(f64, (2, 2))
    body = Builder("body")
    a, c, d, x = (body.param(v) for v in (t, t, t, tx))
    n = body.emit(ops.add, [c, body.emit(ops.matmul, [x, a]).results[0]]).results[0]
    fenced = body.emit(ops.optimization_barrier, [n]).results[0]
    region = body.build([n, fenced, body.emit(ops.tanh, [d]).results[0]])
    main = Builder("main")
    params = [main.param(v) for v in (t, t, t, TensorType(f64, (3, 2, 2)))]
    scan = main.emit(ops.scan, params, regions=[region], consts=1, carries=2, length=3,
                     reverse=False)
    fn = main.build(list(scan.results))
    inputs = [rng.standard_normal(p.type.shape) for p in fn.params]
    got = compile_function(fn, "numba", tiered=False)(inputs)
    for g, w in zip(got, interpret(fn, inputs), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
