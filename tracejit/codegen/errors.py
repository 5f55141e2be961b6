"""What generated code raises. The entry's globals come from codegen alone, so that running a
program needs nothing from the stages above it."""


class ArgumentMismatch(Exception):
    """Raised by a compiled program whose arguments' shapes are not the ones it was planned
    for: JittedFunction's fast path called the wrong program and falls back to looking it up.
    Internal: never reaches the user."""


def index_out_of_bounds(loc) -> str:
    """The message of a gather's out-of-bounds index, in compiled kernels (templates.py) and
    on the NumPy tier alike: the traced indices are only known when the program runs."""
    where = f" at {loc}" if loc else ""
    return (f"tracejit: an index is out of bounds in indexing or np.take{where}: each index "
            "must lie in [-n, n) for an axis of size n (the indices are traced, so they are "
            "checked when the program runs)\nWhat to do: check how the indices are computed "
            "(a loop bound, the number of classes); np.take(x, i, mode='clip') or "
            "mode='wrap' brings them into range")
