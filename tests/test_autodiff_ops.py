"""Each differentiable op's reverse- and forward-mode derivative against central finite
differences in float64, over hypothesis-drawn shapes (binary ops over broadcasting shapes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracejit as tj
from tracejit.autodiff.build import op
from tracejit.ir import ops
from gradcheck import check_grad, check_jvp, ijit

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
SEEDS = st.integers(0, 2**16)
FEW = settings(max_examples=5)


def uses(f, name, *args) -> bool:
    return any(o.name == name for o in tj.make_ir(f)(*args).ops)


def check(f, name, *args, **tol):
    assert uses(f, name, *args), f"{name} does not appear in the traced function"
    check_grad(f, *args, **tol)
    check_jvp(f, *args, **tol)


def uniform(rng, lo, hi, shape, avoid_zero=False):
    x = np.asarray(rng.uniform(lo, hi, shape), np.float64)
    if avoid_zero:
        x = x * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return x


UNARY = {  # op: (function, low, high, random sign)
    "neg": (np.negative, -2, 2, False), "abs": (np.abs, 0.2, 2, True),
    "exp": (np.exp, -2, 2, False), "expm1": (np.expm1, -2, 2, False),
    "log": (np.log, 0.2, 3, False), "log1p": (np.log1p, -0.5, 2, False),
    "sqrt": (np.sqrt, 0.2, 3, False), "sin": (np.sin, -3, 3, False),
    "cos": (np.cos, -3, 3, False), "tan": (np.tan, -1, 1, False),
    "tanh": (np.tanh, -2, 2, False), "sinh": (np.sinh, -2, 2, False),
    "cosh": (np.cosh, -2, 2, False), "arcsin": (np.arcsin, -0.8, 0.8, False),
    "arccos": (np.arccos, -0.8, 0.8, False), "arctan": (np.arctan, -2, 2, False),
    "arcsinh": (np.arcsinh, -2, 2, False), "arctanh": (np.arctanh, -0.8, 0.8, False),
    "erf": (tj.lax.erf, -2, 2, False), "logistic": (tj.lax.logistic, -3, 3, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@FEW
@given(shape=SHAPES, seed=SEEDS)
def test_unary_op_derivative_matches_finite_differences(name, shape, seed):
    fn, lo, hi, signed = UNARY[name]
    x = uniform(np.random.default_rng(seed), lo, hi, shape, signed)
    check(fn, name, x)


BINARY = {  # op: (function, (low, high) of x, of y, random signs)
    "add": (np.add, (-2, 2), (-2, 2), False), "sub": (np.subtract, (-2, 2), (-2, 2), False),
    "mul": (np.multiply, (-2, 2), (-2, 2), False),
    "div": (np.divide, (-2, 2), (0.5, 2), True),
    "power": (np.power, (0.3, 2), (-2, 2), False),
    "maximum": (np.maximum, (-2, 2), (-2, 2), False),
    "minimum": (np.minimum, (-2, 2), (-2, 2), False),
    "arctan2": (np.arctan2, (0.3, 2), (0.3, 2), True),
    "remainder": (np.remainder, (0.1, 0.9), (1.5, 2.5), False),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       seed=SEEDS)
def test_binary_op_derivative_matches_finite_differences_with_broadcasting(name, shapes, seed):
    fn, xr, yr, signed = BINARY[name]
    rng = np.random.default_rng(seed)
    x = uniform(rng, *xr, shapes.input_shapes[0], signed)
    y = uniform(rng, *yr, shapes.input_shapes[1], signed)
    if name in ("maximum", "minimum"):
        y = np.where(np.abs(x - y) < 1e-3, y + 0.1, y)   # no ties: not differentiable there
    check(fn, name, x, y)


@FEW
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=SEEDS)
def test_where_routes_derivatives_to_the_chosen_branch(shapes, seed):
    rng = np.random.default_rng(seed)
    c = rng.random(shapes.input_shapes[0]) < 0.5
    x, y = (rng.standard_normal(s) for s in shapes.input_shapes[1:])
    check(lambda c, x, y: np.where(c, x * x, np.sin(y)), "where", c, x, y)


def test_convert_between_floats_converts_the_derivative_back():
    # Finite differences cannot see through float32 rounding: compare with the exact form.
    x = np.linspace(-2, 2, 7)
    f = lambda x: np.sum(np.sin(x.astype(np.float32)).astype(np.float64) * x)  # noqa: E731
    assert uses(f, "convert", x)
    g = ijit(tj.grad(f))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-6)
    _, t = ijit(lambda x, t: tj.jvp(f, (x,), (t,)))(x, np.ones_like(x))
    np.testing.assert_allclose(t, np.sum(np.cos(x) * x + np.sin(x)), rtol=1e-6, atol=1e-6)


def test_integer_intermediates_stop_the_gradient():
    g = ijit(tj.grad(lambda x: np.sum(x.astype(np.int64) * x)))(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(g, [1.0, 2.0])


LAYOUT = {
    "reshape": lambda x: np.sin(x.reshape(-1, 1)),
    "transpose": lambda x: np.sin(np.moveaxis(x[..., None], -1, 0)) * np.arange(x.size).reshape(
        (1,) + x.shape),
    "slice": lambda x: np.sin(x[::2]) if x.ndim else x * 2.0,
    "rev": lambda x: np.flip(x, axis=0) * np.arange(x.shape[0]).reshape(
        (-1,) + (1,) * (x.ndim - 1)),
    "pad": lambda x: np.pad(x, 1) * np.arange(1, x.ndim * 2 + 3)[: x.ndim + 2].sum(),
    "concatenate": lambda x: np.concatenate([x, np.sin(x), x * x], axis=x.ndim - 1),
    "reduce_sum": lambda x: np.sum(x * x, axis=0),
    "reduce_prod": lambda x: np.prod(x, axis=0),
    "reduce_max": lambda x: np.max(x, axis=0),
    "reduce_min": lambda x: np.min(x, axis=-1),
    "broadcast_in_dim": lambda x: x + np.zeros((2,) + x.shape),
}


@pytest.mark.parametrize("name", sorted(LAYOUT))
@FEW
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3), seed=SEEDS)
def test_layout_and_reduction_derivatives_match_finite_differences(name, shape, seed):
    x = np.random.default_rng(seed).uniform(0.5, 2, shape)   # distinct, nonzero entries
    x = x + np.arange(x.size).reshape(shape) * 1e-2
    check(LAYOUT[name], name, x)


@FEW
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), seed=SEEDS)
def test_take_derivative_is_a_scatter_add(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    idx = rng.integers(0, shape[0], size=5)                     # repeats accumulate
    check(lambda x, i: np.sin(x[i]), "take", x, idx)


@FEW
@given(n=st.integers(1, 4), m=st.integers(1, 3), seed=SEEDS)
def test_scatter_add_derivative_is_a_take(n, m, seed):
    rng = np.random.default_rng(seed)
    x, upd = rng.standard_normal((n, m)), rng.standard_normal((5, m))
    idx = rng.integers(0, n, size=5)
    check(lambda x, i, u: op(ops.scatter_add, x, i, u, axis=0) ** 3, "scatter_add", x, idx, upd)


@FEW
@given(batch=st.sampled_from([(), (2,)]), m=st.integers(1, 3), k=st.integers(1, 3),
       n=st.integers(1, 3), seed=SEEDS)
def test_matmul_derivative_matches_finite_differences(batch, m, k, n, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(batch + (m, k)), rng.standard_normal(batch + (k, n))
    check(np.matmul, "matmul", a, b)


def test_optimization_barrier_passes_derivatives_through():
    x = np.random.default_rng(0).standard_normal((2, 3))
    check(lambda x: np.sin(op(ops.optimization_barrier, x)), "optimization_barrier", x)


def test_call_from_checkpoint_is_differentiated_through_its_body():
    x = np.random.default_rng(0).standard_normal((2, 3))
    check(lambda x: tj.checkpoint(lambda y: np.tanh(y) * y)(x) * x, "call", x)


# -- conventions at non-differentiable points ---------------------------------------------------
def test_maximum_splits_a_tie_equally():
    g = ijit(tj.grad(lambda x, y: np.maximum(x, y).sum(), argnums=(0, 1)))(np.ones(2), np.ones(2))
    np.testing.assert_array_equal(g[0], [0.5, 0.5])
    np.testing.assert_array_equal(g[1], [0.5, 0.5])


def test_relu_at_zero_gets_half_the_gradient():
    g = ijit(tj.grad(lambda x: np.maximum(x, 0.0).sum()))(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])


def test_reduce_max_shares_the_gradient_among_ties():
    g = ijit(tj.grad(lambda x: np.max(x)))(np.array([1.0, 3.0, 3.0, 0.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])


def test_abs_has_zero_gradient_at_zero():
    g = ijit(tj.grad(lambda x: np.abs(x).sum()))(np.array([-2.0, 0.0, 2.0]))
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])


def test_power_at_zero_base_has_finite_gradients():
    gx, gy = ijit(tj.grad(lambda x, y: np.sum(x ** y), argnums=(0, 1)))(np.zeros(3),
                                                                   np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.0])


def test_reduce_prod_gradient_is_exact_with_zeros():
    g = ijit(tj.grad(lambda x: np.prod(x)))(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 6.0, 0.0])
    g = ijit(tj.grad(lambda x: np.prod(x)))(np.array([0.0, 0.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.0])


def test_non_differentiable_ops_stop_the_gradient():
    g = ijit(tj.grad(lambda x: np.sum(np.floor(x) * x + np.sign(x))))(np.array([1.5, -2.5]))
    np.testing.assert_array_equal(g, [1.0, -3.0])


# -- ops added with their derivative rules: hypot, copysign, logaddexp, fmod, cumsum ------------
NEW_BINARY = {  # op: ((low, high) of x, of y, random signs)
    "hypot": ((0.3, 2), (0.3, 2), True), "copysign": ((0.3, 2), (0.3, 2), True),
    "logaddexp": ((-3, 3), (-3, 3), False), "fmod": ((0.1, 0.9), (1.5, 2.5), True),
}


@pytest.mark.parametrize("name", sorted(NEW_BINARY))
@FEW
@given(shape=SHAPES, seed=SEEDS)
def test_new_binary_op_derivatives_match_finite_differences(name, shape, seed):
    xr, yr, signed = NEW_BINARY[name]
    rng = np.random.default_rng(seed)
    x, y = uniform(rng, *xr, shape, signed), uniform(rng, *yr, shape, signed)
    opdef = getattr(ops, name)
    check(lambda x, y: op(opdef, x, y), name, x, y)


def test_hypot_gradient_at_the_origin_is_zero_not_nan():
    g = tj.grad(lambda x, y: np.sum(op(ops.hypot, x, y)), argnums=(0, 1))(
        np.zeros(3), np.zeros(3))
    assert all(np.array_equal(gi, np.zeros(3)) for gi in g)


@FEW
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), seed=SEEDS)
def test_cumsum_derivative_matches_finite_differences(shape, seed):
    x = np.random.default_rng(seed).uniform(-2, 2, shape)
    axis = seed % len(shape)
    check(lambda x: op(ops.cumsum, x, axis=axis) * np.sin(x), "cumsum", x)
