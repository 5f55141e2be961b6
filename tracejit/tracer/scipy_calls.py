"""Which SciPy function a traced value was given to, for the error when SciPy converts it.

SciPy's Python functions (scipy.special.logsumexp, scipy.stats distributions' methods, ...)
convert their arguments with np.asarray, which a traced value refuses, and give tracejit no
hook to trace them (they are neither ufuncs nor NumPy functions). So the refusal names the
SciPy function the user called, found from the stack (the outermost SciPy frame), and
``tracejit.scipy``'s replacement where there is one. Plain strings only: errors.py builds the
error (this module imports nothing of tracejit).
"""
from __future__ import annotations

import os
import sys

# SciPy's functions that tracejit.scipy implements on traced values (same arguments).
REPLACED = {"scipy.special.logsumexp", "scipy.stats.norm.logpdf",
            "scipy.stats.multivariate_normal.logpdf"}

_scipy_dir: str | None = None


def in_scipy(filename: str) -> bool:
    """Whether a frame's file is SciPy's (once SciPy is imported; before, none is)."""
    global _scipy_dir
    if _scipy_dir is None:
        scipy = sys.modules.get("scipy")
        if scipy is None or not getattr(scipy, "__file__", None):
            return False
        _scipy_dir = os.path.dirname(os.path.abspath(scipy.__file__)) + os.sep
    return filename.startswith(_scipy_dir)


def public_name(frame) -> tuple[str, bool]:
    """The user-facing name of the SciPy function running in ``frame`` (the outermost SciPy
    frame), and whether it is a method of a frozen distribution."""
    code = frame.f_code
    owner = frame.f_locals.get("self") if code.co_varnames[:1] == ("self",) else None
    if owner is None:
        module = ".".join(p for p in frame.f_globals.get("__name__", "scipy").split(".")
                          if not p.startswith("_"))
        return f"{module}.{code.co_name}", False
    # a frozen distribution holds its own: rv_frozen as .dist, multi_rv_frozen as ._dist
    dist = getattr(owner, "dist", None) or getattr(owner, "_dist", owner)
    name = getattr(dist, "name", None) or type(dist).__name__.removesuffix("_gen")
    return f"scipy.stats.{name}.{code.co_name}", dist is not owner


def refusal(frame) -> tuple[str, str]:
    """(what, what to do) for a traced value given to the SciPy function running in ``frame``."""
    name, frozen = public_name(frame)
    what = (f"{name}{' of a frozen distribution' if frozen else ''} on a traced value (SciPy "
            "converts its arguments to NumPy arrays with np.asarray, which needs concrete "
            "values, before tracejit sees them)")
    if name in REPLACED:
        extra = (", passing the frozen distribution's parameters as arguments (e.g. "
                 "norm.logpdf(x, loc, scale))") if frozen else ""
        return what, (f"call tracejit.{name} instead: it takes SciPy's arguments{extra}, "
                      "traces, and runs SciPy's own on arrays")
    return what, ("compute it with NumPy functions (tracejit.scipy has logsumexp, "
                  "norm.logpdf and multivariate_normal.logpdf), or open an issue")
