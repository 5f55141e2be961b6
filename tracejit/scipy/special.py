"""``tracejit.scipy.special``: scipy.special.logsumexp on traced values, and SciPy's ufuncs
that trace as they are (re-exported, so that one import serves both)."""
from __future__ import annotations

import scipy.special
from scipy.special import digamma, erf, expit, gammaln, logit, psi

from ..tracer.numpy import scipy_functions
from ..tracer.numpy.rules import has_tracer

__all__ = ["logsumexp", "gammaln", "digamma", "psi", "expit", "logit", "erf"]


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """scipy.special.logsumexp: ``log(sum(b * exp(a), axis))`` without overflow. Traced,
    when ``a`` or ``b`` is; SciPy's own otherwise."""
    if has_tracer([a, b]):
        return scipy_functions.logsumexp(a, axis, b, keepdims, return_sign)
    return scipy.special.logsumexp(a, axis=axis, b=b, keepdims=keepdims,
                                   return_sign=return_sign)
