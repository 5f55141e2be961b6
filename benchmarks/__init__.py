"""Benchmarks: ``python -m benchmarks`` runs every module here (each has ``main()``);
``python -m benchmarks backend`` runs one by name."""
import os

# Steady-state tables time compiled code: untiered unless a benchmark (compile.py) says
# otherwise, in this process and the fresh ones it starts.
os.environ.setdefault("TRACEJIT_TIERED", "0")
