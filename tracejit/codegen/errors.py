"""What generated code raises. The entry's globals come from codegen alone, so that running a
program needs nothing from the stages above it."""


class ArgumentMismatch(Exception):
    """Raised by a compiled program whose arguments' shapes are not the ones it was planned
    for: JittedFunction's fast path called the wrong program and falls back to looking it up.
    Internal: never reaches the user."""
