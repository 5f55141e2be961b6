"""``python -m benchmarks.real_code [names] [--backend B] [--no-time]``."""
from . import _cli

_cli()
