"""``tracejit.scipy.stats``: ``norm.logpdf`` and ``multivariate_normal.logpdf`` on traced
values, with SciPy's arguments; SciPy's own when no argument is traced. Other methods of these
distributions do not exist here (an AttributeError saying so), rather than run on NumPy."""
from __future__ import annotations

import scipy.stats

from ..tracer.numpy import scipy_functions
from ..tracer.numpy.rules import has_tracer

__all__ = ["norm", "multivariate_normal"]


class _Distribution:
    """A SciPy distribution's methods that tracejit traces; any other is an error."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        raise AttributeError(f"tracejit.scipy.stats.{self._name}.{method} does not exist: "
                             f"tracejit.scipy.stats.{self._name} has {self._methods} (compute "
                             "the rest with NumPy functions, or open an issue)")

    def __repr__(self) -> str:
        return f"<tracejit.scipy.stats.{self._name}: {self._methods}>"


class _Norm(_Distribution):
    _methods = "logpdf"

    def logpdf(self, x, loc=0, scale=1):
        """scipy.stats.norm.logpdf: float64, nan where ``scale <= 0``."""
        if has_tracer([x, loc, scale]):
            return scipy_functions.norm_logpdf(x, loc, scale)
        return scipy.stats.norm.logpdf(x, loc, scale)


class _MultivariateNormal(_Distribution):
    _methods = "logpdf"

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """scipy.stats.multivariate_normal.logpdf, traced by a Cholesky factor of ``cov``."""
        if has_tracer([x, mean, cov]):
            return scipy_functions.multivariate_normal_logpdf(x, mean, cov, allow_singular)
        return scipy.stats.multivariate_normal.logpdf(x, mean, cov, allow_singular)


norm = _Norm("norm")
multivariate_normal = _MultivariateNormal("multivariate_normal")
