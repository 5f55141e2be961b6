"""The driver: from a Python call to a program run. It keys the cache (signature.py), traces
on a miss (the tracer), runs the IR passes (pipeline.py), picks the backend (backend.py:
compiled, tiered.py, the NumPy tier or the interpreter) and calls the result (jit.py).

The stages below it (tracer, ir, codegen) know nothing of it; autodiff and the public API
build on it."""
from .backend import BACKENDS, compile_function, program_of
from .entry import CompiledEntry
from .executable import Executable, Interpreted
from .jit import JittedFunction, jit, make_ir
from .lowered import Lowered
from .pipeline import fusion_of, optimized_of, plan_of
from .retrace import RetraceWarning
from .signature import leaf_key
from .tiered import CompileWarning, TieredProgram

__all__ = ["BACKENDS", "compile_function", "program_of", "CompiledEntry", "Executable",
           "Interpreted", "JittedFunction", "jit", "make_ir", "Lowered", "fusion_of",
           "optimized_of", "plan_of", "RetraceWarning", "leaf_key", "CompileWarning",
           "TieredProgram"]
