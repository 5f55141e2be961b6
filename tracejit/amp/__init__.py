"""Mixed-precision training: autocast (an IR transform by a policy table), dynamic loss
scaling (``GradScaler``) and float32 intermediates for float16 chains (``excess_precision``)."""
from .autocast import autocast, autocast_function
from .excess_precision import excess_precision, excess_precision_function
from .grad_scaler import GradScaler
from .policy import POLICY

__all__ = ["autocast", "autocast_function", "excess_precision", "excess_precision_function",
           "GradScaler", "POLICY"]
