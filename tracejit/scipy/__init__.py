"""``tracejit.scipy``: SciPy's functions that trace, with SciPy's arguments (as ``jax.scipy``).

SciPy's special functions that are ufuncs (``scipy.special.expit``, ``logit``, ``erf``,
``gammaln``, ``digamma``) trace as they are. Its Python functions convert their arguments with
np.asarray, which a traced value refuses, and give tracejit no hook to trace them; so code
under ``jit`` or ``grad`` calls these instead (a traced value given to SciPy's own raises an
error naming the replacement)::

    from tracejit.scipy.special import logsumexp
    from tracejit.scipy.stats import norm, multivariate_normal

Each runs SciPy's own function when no argument is traced, so eager results are SciPy's.
"""
__all__ = ["special", "stats"]


def __getattr__(name):
    """Each submodule on first use: scipy.stats alone takes a few hundred ms to import."""
    if name in __all__:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
