"""Mixed-precision training: autocast (an IR transform by a policy table) and dynamic loss
scaling (``GradScaler``)."""
from .autocast import autocast, autocast_function
from .grad_scaler import GradScaler
from .policy import POLICY

__all__ = ["autocast", "autocast_function", "GradScaler", "POLICY"]
