"""Regression tests for bugs found probing tracejit's SciPy support against SciPy and JAX."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import scipy.stats

import tracejit

BACKENDS = [{"backend": "interpreter"}, {"backend": "numpy"}, {"tiered": False}]


@pytest.mark.parametrize("kw", BACKENDS, ids=["interpreter", "numpy", "compiled"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_logit_gradient_is_infinite_at_zero_and_one_as_jaxs(kw, dtype):
    """JAX's logit has the derivative 1 / (p (1 - p)): inf at the ends, where the quotient
    rule of log(p / (1 - p)) gave NaN (0 * inf in the denominator's partial)."""
    p = np.array([0.0, 1.0, 0.1, 0.5, 0.9], dtype)
    g = tracejit.jit(tracejit.grad(lambda p: scipy.special.logit(p).sum()), **kw)(p)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, [np.inf, np.inf, *(1 / (p[2:] * (1 - p[2:])))], rtol=1e-6)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(tracejit.jit(lambda p: scipy.special.logit(p), **kw)(p),
                                      scipy.special.logit(p))


def test_frozen_multivariate_normal_on_a_traced_value_names_the_replacement():
    frozen = scipy.stats.multivariate_normal(np.zeros(3))
    with pytest.raises(TypeError, match=r"tracejit\.scipy\.stats\.multivariate_normal\.logpdf"
                                         r" instead") as info:
        tracejit.jit(lambda x: frozen.logpdf(x), backend="interpreter")(np.ones(3))
    assert "multivariate_normal_frozen" not in str(info.value)
    assert "of a frozen distribution" in str(info.value)


@pytest.mark.parametrize("kw", BACKENDS, ids=["interpreter", "numpy", "compiled"])
def test_norm_logpdf_gradient_at_infinite_x_is_infinite_as_jaxs_not_nan(kw):
    """d/dx of -(x - loc)**2 / (2 scale**2) is -inf at x = inf (JAX's value); the -inf
    constant chosen there left the formula's branch a zero cotangent times an infinite
    partial: NaN."""
    from tracejit.scipy.stats import norm
    x = np.array([np.inf, -np.inf, 1.0, np.nan])
    g = tracejit.jit(tracejit.grad(lambda x: norm.logpdf(x, 0.5, 2.0).sum()), **kw)(x)
    np.testing.assert_array_equal(g, [-np.inf, np.inf, -(1.0 - 0.5) / 4, np.nan])
    np.testing.assert_array_equal(tracejit.jit(lambda x: norm.logpdf(x, 0.5, 2.0), **kw)(x),
                                  scipy.stats.norm.logpdf(x, 0.5, 2.0))
