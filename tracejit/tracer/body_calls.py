"""How the control-flow primitives (control_flow.py) call the user's functions and speak of
them in errors: a call that cannot bind its arguments said at the user's line, the names the
user gave a body's arguments (``c``, ``carry[1]``), and branches that return other types."""
from __future__ import annotations

import inspect
import re

from .errors import TracerError, user_location
from .pytree import flatten_with_paths


class ControlFlowTypeError(TracerError, TypeError):
    """A body returned other types or another structure than the op needs."""


def control_error(what: str, hint: str) -> ControlFlowTypeError:
    loc = user_location()
    where = f" at {loc.describe()}" if loc else ""
    return ControlFlowTypeError(f"tracejit: {what}{where}\nWhat to do: {hint}")


# Python's messages for a call that cannot bind its arguments (or of something not callable)
_BAD_CALL = re.compile(r"positional argument|required (keyword-only )?argument|unexpected "
                       r"keyword argument|object is not callable")


def called_as(fn, call: str, hint: str):
    """``fn``, whose call that fails to bind its arguments says how the control-flow primitive
    calls it, at the user's line: Python's message names neither, and its traceback ends
    inside tracejit (the user's function is never entered)."""
    if not callable(fn):
        raise control_error(f"{call}, but it is a {type(fn).__name__}, not a function", hint)

    def called(*args):
        try:
            return fn(*args)
        except TypeError as e:
            if e.__traceback__.tb_next is not None or not _BAD_CALL.search(str(e)):
                raise                           # raised inside fn: the user's own error
            raise control_error(f"{call}, but {e}", hint) from None
    called.user_fn = fn                 # (for user_names)
    return called


def user_names(fn, call_args: tuple) -> list[str] | None:
    """The name of each leaf of ``call_args`` (the positional arguments the user's ``fn`` is
    called with) as the user wrote it: ``fn``'s parameter and the path into it (``c``,
    ``carry[0]``, ``state['h']``), for errors about a body's arguments (a write into a loop
    carry named ``c``, not ``args1``); None where ``fn``'s parameters cannot be read."""
    fn = getattr(fn, "user_fn", fn)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    heads = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            heads.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            heads += [f"{p.name}[{j}]" for j in range(len(call_args) - len(heads))]
            break
        else:
            break
    names = []
    for path in flatten_with_paths(tuple(call_args))[1]:
        m = re.match(r"\[(\d+)\](.*)", path)
        k, rest = int(m[1]), m[2]
        names.append((heads[k] if k < len(heads) else f"args{k}") + rest)
    return names


def branch_type_error(what, names, bodies, k, i) -> ControlFlowTypeError:
    """The error for branch ``k``'s result ``i``, named against the first branch (or, when
    the first is the odd one, the first other branch that differs against it)."""
    def named(b):
        t = b.function.result_types[i]
        py = {"b": "bool", "i": "int", "u": "int"}.get(t.dtype.kind, "float")
        return f"a Python {py} ({t})" if b.out_weak[i] else str(t)
    if k == 0:
        k = next((j for j, b in enumerate(bodies) if named(b) != named(bodies[0])), 0)
    return control_error(f"{what}: {names[k]} result[{i}] is {named(bodies[k])} but {names[0]}'s "
                  f"is {named(bodies[0])}", "make the branches return the same dtypes and "
                  "shapes (x.astype(...), np.broadcast_to(...))")
