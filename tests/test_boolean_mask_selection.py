"""``x[mask]`` with a traced boolean mask (tracer/numpy/masked.py): the idioms that never need
the selection's size work, with NumPy's results and correct gradients; everything else is an
error naming the user's line and saying what to write instead.

Most tests run on the NumPy tier (``backend="numpy"``: no Numba compiles); two run compiled.
Gradients are float64, against central differences (tests/gradcheck.py).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import tracejit as tj
from benchmarks.real_code.cs231n import cs231n_sigmoid
from tests.gradcheck import check_grad
from tracejit.tracer.errors import UnsupportedError

HERE = os.path.basename(__file__)


def jit(fn):
    return tj.jit(fn, backend="numpy")


def rng(seed=0):
    return np.random.default_rng(seed)


def same_as_numpy(fn, *args, backend="numpy"):
    """fn under jit on copies of args gives eager NumPy's results, dtypes and shapes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # NumPy's "Mean of empty slice"
        want = fn(*[np.copy(a) for a in args])
        got = tj.jit(fn, backend=backend)(*[np.copy(a) for a in args])
    want, got = (w if isinstance(w, tuple) else (w,) for w in (want, got))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        rtol = 1e-5 if w.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)


def line_of(fn, offset=1):
    return fn.__code__.co_firstlineno + offset


def error_at(fn, *args, line, exc=UnsupportedError):
    """jit(fn)(*args) raises ``exc`` naming this file and ``line``; returns the message."""
    with pytest.raises(exc) as info:
        jit(fn)(*args)
    msg = str(info.value)
    assert f"{HERE}:{line}" in msg, msg
    return msg


# --- the idioms of real code (benchmarks/real_code) ----------------------------------------


def nbody_accelerations(pos, mass):
    """NPBench's nbody: the two masks are different tracers of equal computations. Without
    softening, the diagonal is 0 and unselected: 0 ** -1.5 must not reach the gradient."""
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx, dy, dz = x.T - x, y.T - y, z.T - z
    inv_r3 = dx**2 + dy**2 + dz**2
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0]**(-1.5)
    return np.hstack(((dx * inv_r3) @ mass, (dy * inv_r3) @ mass, (dz * inv_r3) @ mass))


def test_update_under_a_recomputed_mask_matches_numpy_and_its_gradient_is_finite():
    pos, mass = rng().standard_normal((5, 3)), rng(1).random((5, 1))
    same_as_numpy(nbody_accelerations, pos, mass)
    check_grad(nbody_accelerations, pos, mass)


def azimuthal_means(data, radius):
    """NPBench's azimint_naive: the mean of each radial bin's values (the last is empty)."""
    rmax = radius.max()
    res = np.zeros(6)
    for i in range(6):
        r1, r2 = rmax * i / 4, rmax * (i + 1) / 4
        res[i] = data[np.logical_and(r1 <= radius, radius < r2)].mean()
    return res


def test_mean_of_a_selection_matches_numpy_including_an_empty_one():
    data, radius = rng().random(40), rng(1).random(40)
    same_as_numpy(azimuthal_means, data, radius)
    assert np.isnan(jit(azimuthal_means)(data, radius)[-1])
    check_grad(lambda d, r: np.nan_to_num(azimuthal_means(d, r)), data, radius)


# cs231n's sigmoid: writes under two masks, and a selection of one array into another
stable_sigmoid = cs231n_sigmoid


def test_writes_of_selections_under_their_own_masks_match_numpy():
    x = rng().standard_normal((6, 5)) * 4
    same_as_numpy(stable_sigmoid, x)
    check_grad(stable_sigmoid, x)


def leaky_relu(z):
    _z = z.copy()
    _z[z < 0] = _z[z < 0] * 0.3
    return _z


def test_in_place_scaling_under_an_equal_mask_matches_numpy():
    z = rng().standard_normal((4, 6))
    same_as_numpy(leaky_relu, z)
    check_grad(leaky_relu, z)


def logistic_nll(y_pred, y):
    """numpy-ml: log of selections, where the unselected values would be log(0)."""
    return -np.log(y_pred[y == 1]).sum() - np.log(1 - y_pred[y == 0]).sum()


def test_sums_of_logs_of_selections_have_finite_gradients_where_unselected_is_log_zero():
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    y_pred = np.array([1.0, 0.0, 0.3, 0.6, 0.2, 0.9])   # log(1 - 1) and log(0): unselected
    same_as_numpy(logistic_nll, y_pred, y)
    g = jit(tj.grad(logistic_nll))(y_pred, y)
    np.testing.assert_allclose(g, [-1 / 1.0, 1 / 1.0, -1 / 0.3, 1 / 0.4, 1 / 0.8, -1 / 0.9])
    check_grad(logistic_nll, np.clip(y_pred, 0.05, 0.95), y)


@pytest.mark.parametrize("fn, make", [
    pytest.param(stable_sigmoid, lambda: (rng().standard_normal((4, 3)) * 4,),
                 marks=pytest.mark.slow),
    (logistic_nll, lambda: (rng().random(8) * 0.9 + 0.05, (rng(1).random(8) > 0.5) * 1.0)),
], ids=["sigmoid", "logistic_nll"])
def test_selections_compiled_match_numpy_and_their_gradient(fn, make):
    args = make()
    same_as_numpy(fn, *args, backend=None)
    loss = lambda x, *rest: np.sum(fn(x, *rest))                        # noqa: E731
    g = tj.jit(tj.grad(loss))(*args)
    np.testing.assert_allclose(g, jit(tj.grad(loss))(*args), rtol=1e-12)


# --- shapes, axes and dtypes --------------------------------------------------------------


def test_a_row_mask_selects_rows_and_reduces_over_them_or_within_them():
    def f(x):
        s = x[x[:, 0] > 0]
        return (s.sum(axis=0), s.mean(0), s.sum(), s.mean(), s.sum(axis=1).sum(),
                np.mean(s, axis=-1).sum(), s.prod(axis=(0, 1)), s.mean(axis=0, keepdims=True),
                s.sum(axis=1, keepdims=True).sum(axis=0, keepdims=True))
    same_as_numpy(f, rng().standard_normal((6, 3)))
    check_grad(lambda x: x[x[:, 0] > 0].mean(0) * x[x[:, 1] > 0].sum(1).sum(),
               rng().standard_normal((6, 3)))


def test_a_two_dimensional_mask_of_a_three_dimensional_array():
    def f(x):
        m = x.sum(axis=2) > 0
        s = x[m] * np.array([1.0, 2.0, 3.0, 4.0])
        return s.sum(0), s.mean(), np.count_nonzero(s > 0), (s > 1).any(axis=1).sum()
    same_as_numpy(f, rng().standard_normal((3, 5, 4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_reductions_keep_numpys_dtypes(dtype):
    def f(x):
        s = x[x > 0] if x.dtype != np.bool_ else x[x]
        out = (s.sum(), s.prod(), s.any(), s.all(), np.count_nonzero(s),
               np.sum(s, dtype=np.float64))
        return out + ((s.mean(), np.mean(s)) if x.dtype != np.bool_ else ())
    x = (rng().standard_normal((4, 5)) * 3).astype(dtype)
    same_as_numpy(f, x)


def test_an_empty_selection_gives_numpys_values():
    def f(x):
        s = x[x > 100]
        return s.sum(), s.mean(), s.prod(), s.any(), s.all(), s.sum(axis=0), np.count_nonzero(s)
    same_as_numpy(f, rng().standard_normal(5))
    same_as_numpy(lambda x: x[x[:, 0] > 100].mean(axis=0), rng().standard_normal((4, 2)))

    def g(x):
        x[x > 100] = x[x > 100] * 2
        return x + 0
    same_as_numpy(g, rng().standard_normal(5))


# --- elementwise operations ---------------------------------------------------------------


def test_operators_and_ufuncs_with_scalars_and_arrays_of_one_elements_shape():
    w = np.array([1.0, 2.0, 3.0])

    def f(x, a):
        s = x[x[:, 0] > 0]
        t = x.sum()                               # a 0-d tracer on the left: Tracer defers
        return ((a * s).sum(), (s * a).sum(), np.add(t, s).sum(), (np.float64(2) * s).sum(),
                (w * s).sum(0), (x[0] - s).sum(0), (s < t).sum(), (t < s).sum(),
                divmod(s, 0.7)[1].sum(), (2 ** s).sum(), (abs(s) + (+s) - (-s)).sum(),
                (~(s > 0)).sum(), np.exp(s, dtype=np.float32).sum(), (s * [1, 2, 3]).sum(),
                (s * np.ones((1, 3))).sum(), s.astype(np.int64).sum(), s.copy().sum(),
                (s * s + np.sin(s) / x[x[:, 0] > 0]).sum())
    same_as_numpy(f, rng().standard_normal((5, 3)), 1.5)


def test_in_place_operators_under_a_mask_write_the_array():
    def f(x):
        y = x.copy()
        y[x > 0] += 1
        y[x > 0] *= x[x > 0]
        y[x < 0] = np.exp(x[x < 0]).astype(np.float32)
        k = np.zeros(x.shape, dtype=np.int64)
        k[x > 0] = x[x > 0] * 10        # cast as NumPy's assignment does
        return y, k
    same_as_numpy(f, rng().standard_normal((4, 3)))


def test_a_selection_is_a_copy_that_later_writes_do_not_change():
    def f(x):
        m = x > 0
        s = x[m]
        x[...] = 0.0
        return s.sum() + x.sum()
    same_as_numpy(f, rng().standard_normal(6))


# --- errors -------------------------------------------------------------------------------


def test_returning_a_selection_names_where_it_was_made():
    def f(x):
        return x[x > 0]
    msg = error_at(f, rng().standard_normal(4), line=line_of(f))
    assert "np.where(mask, x" in msg


@pytest.mark.parametrize("what", ["shape", "len", "size"])
def test_the_size_of_a_selection_is_an_error_suggesting_count_nonzero(what):
    def f(x):
        s = x[x > 0]
        return {"shape": lambda: s.shape, "len": lambda: len(s), "size": lambda: s.size}[what]()
    assert "count_nonzero" in error_at(f, rng().standard_normal(4), line=line_of(f, 2))


@pytest.mark.parametrize("reduce", [lambda s: s.max(), lambda s: np.min(s),
                                    lambda s: s.argmax(), lambda s: np.std(s)],
                         ids=["max", "np.min", "argmax", "np.std"])
def test_reductions_without_an_identity_suggest_where(reduce):
    def f(x):
        s = x[x > 0]
        return reduce(s)
    msg = error_at(f, rng().standard_normal(4), line=reduce.__code__.co_firstlineno)
    assert "np.where(mask" in msg


def test_selections_under_different_masks_do_not_combine():
    def add(x):
        return (x[x > 0] + x[x < 0]).sum()

    def assign(x):
        x[x < 0] = x[x > 0]

    assert "different masks" in error_at(add, rng().standard_normal(4), line=line_of(add))
    assert "another mask" in error_at(assign, rng().standard_normal(4), line=line_of(assign))


def test_an_array_that_would_pair_with_selected_elements_is_an_error():
    def f(x):
        return (x[x > 0] * x).sum()
    assert "by position" in error_at(f, rng().standard_normal(4), line=line_of(f))


@pytest.mark.parametrize("use", [
    lambda x, s: s @ x.T, lambda x, s: s[0], lambda x, s: np.concatenate([s, x[0]]),
    lambda x, s: [v for v in s], lambda x, s: np.where(x[:, 0] > 1, s, 0),
    lambda x, s: np.add.reduce(s), lambda x, s: s.reshape(-1), lambda x, s: np.asarray(s),
], ids=["matmul", "index", "concatenate", "iterate", "np.where", "ufunc.reduce", "reshape",
        "asarray"])
def test_other_uses_of_a_selection_are_errors_naming_the_line(use):
    def f(x):
        return use(x, x[x[:, 0] > 0])
    error_at(f, rng().standard_normal((4, 3)), line=use.__code__.co_firstlineno)


def test_a_traced_mask_with_other_indices_is_still_an_error():
    def f(x):
        return x[x[:, 0] > 0, 0]
    assert "mask alone" in error_at(f, rng().standard_normal((4, 3)), line=line_of(f))


def test_a_write_under_a_mask_changed_after_the_selection_is_an_error():
    def f(x):
        m = x > 0
        s = x[m] * 2
        m[0] = False
        x[m] = s
    error_at(f, rng().standard_normal(4), line=line_of(f, 4))
