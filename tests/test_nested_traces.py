"""Values of an enclosing trace (a jit argument) used inside an inner one (grad, a loop body, a
branch): each op goes to the innermost trace among its operands or the one being traced, so
grad sees its dependence on the differentiated argument and a body captures what it uses."""
import numpy as np

import tracejit as tj
from tracejit.nn import functional as F

X = np.arange(4.0)
MASK = np.array([True, False, True, False])


def _same_under_jit(f, *args):
    want = f(*args)
    for tiered in (False, True):
        got = tj.jit(f, tiered=tiered)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    return want


def test_where_with_a_condition_from_jit_has_its_gradient_under_grad():
    def f(x, c):
        return tj.grad(lambda x: np.where(c, x, -x).sum())(x)
    np.testing.assert_array_equal(_same_under_jit(f, X, MASK), [1, -1, 1, -1])


def test_dropout_with_a_seed_from_jit_has_its_gradient_under_grad():
    def f(x, seed):
        return tj.grad(lambda x: F.dropout(x, 0.5, seed=seed).sum())(x)
    assert _same_under_jit(f, np.ones(8), np.int64(3)).any()


def test_where_with_a_constant_mask_in_branches_and_loop_bodies_captures_the_outer_array():
    def f(x):
        a = tj.cond(x.sum() > 0, lambda: np.where(MASK, x, 0.0), lambda: x)
        b = tj.fori_loop(0, 2, lambda i, acc: acc + np.where(MASK, x, 0.0), np.zeros(4))
        return a + b
    _same_under_jit(f, X)


def test_masked_assignment_with_a_mask_from_jit_under_grad():
    def f(x, m):
        def loss(x):
            y = x * 1.0
            y[m] = 0.0
            return y.sum()
        return tj.grad(loss)(x)
    np.testing.assert_array_equal(_same_under_jit(f, X, MASK), [0, 1, 0, 1])


def test_cond_with_a_predicate_from_jit_under_grad():
    def operand(x, p):
        return tj.grad(lambda x: tj.cond(p, lambda x: x * 3, lambda x: x, x).sum())(x)

    def closure(x, p):
        return tj.grad(lambda x: tj.cond(p, lambda: x * 3, lambda: x).sum())(x)
    for f in (operand, closure):
        np.testing.assert_array_equal(_same_under_jit(f, X, np.bool_(True)), [3] * 4)
