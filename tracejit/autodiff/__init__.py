"""Automatic differentiation as IR -> IR transforms (reverse.py, forward.py), with per-op rules
(partials.py for elementwise math, vjp_rules.py, jvp_rules.py) and the public API (api.py)."""
from . import control_rules, linalg_rules  # register control flow's and linear algebra's
from .api import grad, value_and_grad, vjp
from .forward_api import jvp
from .jacobians import hessian, jacfwd, jacrev
from .checkpoint import checkpoint
from .custom import custom_vjp
from .custom_jvp import custom_jvp
from .forward import jvp_function
from .reverse import vjp_function
from .split import split_vjp

del control_rules, linalg_rules

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "checkpoint",
           "custom_vjp", "custom_jvp", "vjp_function", "jvp_function", "split_vjp"]
