"""Whole-program passes: each takes a Function and gives an equivalent, verifiable Function
(``fuse`` gives the Function's grouping into kernels). ``PassLog`` records what each did."""
from .cse import cse
from .dce import dce
from .fold import fold_constants
from .fusion import Fusion, FusionGroup, fuse
from .inline import inline_calls
from .pass_log import PassLog, PassRecord
from .pipeline import optimize
from .simplify import simplify

__all__ = ["cse", "dce", "fold_constants", "fuse", "Fusion", "FusionGroup", "inline_calls",
           "optimize", "PassLog", "PassRecord", "simplify"]
