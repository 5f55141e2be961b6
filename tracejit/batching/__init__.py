"""vmap: the batching transform (api.py), its per-op rules (rules.py, control_rules.py) and
the push of a Function's ops on batched values (push.py)."""
from . import control_rules, rules  # noqa: F401  (fill push.RULES)
from .api import vmap

__all__ = ["vmap"]
