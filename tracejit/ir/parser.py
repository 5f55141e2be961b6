"""Parser of the printer's text form, so IR can be saved, loaded and written by hand in tests.

The text may come from anywhere (a file, a bug report), so parsing never executes it and, on
any malformed input, raises ParseError with a line (or VerificationError for well-formed but
ill-typed IR): never a RecursionError, an int-conversion ValueError or an IndexError.
"""
from __future__ import annotations

import json
import re

from . import dtypes
from .graph import Function, Op, Value
from .literals import array_from_text, parse_scalar
from .registry import OPS, IRTypeError
from .types import TensorType
from .verifier import VerificationError


class ParseError(ValueError):
    pass


# Deeper nesting than the printer ever writes is malformed; the limits keep the recursive
# descent far from Python's recursion limit.
MAX_LITERAL_NESTING = 32
MAX_REGION_NESTING = 64


_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<value>%[A-Za-z0-9_.]+)
  | (?P<func>@(?:[A-Za-z0-9_.]+|"(?:[^"\\]|\\.)*"))
  | (?P<number>-?(?:inf|nan|\d+(?:\.\d*)?(?:e[-+]?\d+)?)(?![A-Za-z0-9_]))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<arrow>->)
  | (?P<punct>[=,:()\[\]{}])
  | (?P<newline>\n)
  | (?P<space>[ \t\r]+)
""", re.VERBOSE)


def _tokenize(text: str):
    pos, line = 0, 1
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ParseError(f"line {line}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        tok = m.group()
        if kind == "newline":
            out.append(("newline", tok, line))
            line += 1
        elif kind != "space":
            out.append((kind, tok, line))
            line += tok.count("\n")       # a string token may span lines
        pos = m.end()
    out.append(("eof", "", line))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokenize(text)
        self.i = 0
        self.regions = 0        # nesting depth of regions being parsed

    # -- token helpers
    def peek(self, skip_newlines=True):
        j = self.i
        while skip_newlines and self.toks[j][0] in ("newline", "comment"):
            j += 1
        return self.toks[j]

    def skip_newlines(self):
        while self.toks[self.i][0] in ("newline", "comment"):
            self.i += 1

    def next(self):
        tok = self.toks[self.i]
        if tok[0] != "eof":     # eof repeats rather than running off the end
            self.i += 1
        return tok

    @property
    def line(self) -> int:
        return self.toks[self.i][2]

    def expect(self, text=None, kind=None):
        tok = self.next()
        if (text is not None and tok[1] != text) or (kind is not None and tok[0] != kind):
            raise ParseError(f"line {tok[2]}: expected {text or kind}, got {tok[1]!r}")
        return tok

    def at(self, text):
        return self.toks[self.i][1] == text

    # -- grammar
    def parse_type(self) -> TensorType:
        kind, tok, line = self.next()
        if kind != "ident" or not dtypes.is_short_name(tok):
            raise ParseError(f"line {line}: expected a type like f32[2,3], got {tok!r}")
        shape = self.parse_int_list()
        if any(d < 0 for d in shape):
            raise ParseError(f"line {line}: negative dimension in {tok}{list(shape)}")
        return TensorType(dtypes.from_short(tok), shape)

    def parse_int_list(self):
        self.expect("[")
        items = []
        while not self.at("]"):
            kind, tok, line = self.expect(kind="number")
            if not tok.lstrip("-").isdigit():
                raise ParseError(f"line {line}: expected an integer, got {tok!r}")
            items.append(_number(tok, line))
            if not self.at("]"):
                self.expect(",")
        self.expect("]")
        return tuple(items)

    def parse_literal(self, depth=0):
        kind, tok, line = self.next()
        if kind == "number" or tok in ("true", "false", "nan", "inf"):
            return _number(tok, line)
        if tok == "none":
            return None
        if kind == "string":
            return _string(tok, line)
        if tok == "base64":
            return ("base64", _string(self.expect(kind="string")[1], line))
        if kind == "ident" and dtypes.is_short_name(tok):
            return dtypes.from_short(tok)
        if tok == "[":
            if depth >= MAX_LITERAL_NESTING:
                raise ParseError(f"line {line}: attribute nested more than "
                                 f"{MAX_LITERAL_NESTING} levels deep")
            items = []
            while not self.at("]"):
                items.append(self.parse_literal(depth + 1))
                if not self.at("]"):
                    self.expect(",")
            self.expect("]")
            return items
        raise ParseError(f"line {line}: unexpected {tok!r} in an attribute")

    def parse_function(self) -> Function:
        self.skip_newlines()
        self.expect("func")
        header_line = self.toks[self.i][2]
        name = self.expect(kind="func")[1][1:]
        if name.startswith('"'):
            name = _string(name, header_line)
        env: dict[str, Value] = {}
        params = []
        self.expect("(")
        while not self.at(")"):
            vname = self.expect(kind="value")[1]
            self.expect(":")
            v = Value(self.parse_type(), None, vname[1:])
            if vname in env:
                raise ParseError(f"line {header_line}: parameter {vname} defined twice")
            env[vname] = v
            params.append(v)
            if not self.at(")"):
                self.expect(",")
        self.expect(")")
        self.expect(kind="arrow")
        self.expect("(")
        declared = []
        while not self.at(")"):
            declared.append(self.parse_type())
            if not self.at(")"):
                self.expect(",")
        self.expect(")")
        self.expect("{")
        ops = []
        while True:
            self.skip_newlines()
            if self.at("return"):
                break
            ops.append(self.parse_op(env))
        return_line = self.expect("return")[2]
        results = []
        while self.toks[self.i][0] == "value":
            results.append(self._use(env, self.next()))
            if not self.at(","):
                break
            self.next()
        got = [r.type for r in results]
        if got != declared:
            raise ParseError(f"line {return_line}: @{name} declares results "
                             f"{[str(t) for t in declared]} but returns {[str(t) for t in got]}")
        self.skip_newlines()
        self.expect("}")
        return Function(name, params, ops, results)

    def _use(self, env, tok):
        if tok[1] not in env:
            raise ParseError(f"line {tok[2]}: {tok[1]} is used before it is defined")
        return env[tok[1]]

    def parse_op(self, env) -> Op:
        line = self.toks[self.i][2]
        lhs = []
        if self.toks[self.i][0] == "value":
            while True:
                lhs.append(self.expect(kind="value")[1])
                if not self.at(","):
                    break
                self.next()
            self.expect("=")
        opname = self.expect(kind="ident")[1]
        if opname not in OPS:
            raise ParseError(f"line {line}: unknown op {opname!r}")
        opdef = OPS[opname]
        operands = []
        while self.toks[self.i][0] == "value":
            operands.append(self._use(env, self.next()))
            if not self.at(","):
                break
            self.next()
        raw = {}
        while self.toks[self.i][0] == "ident" and self.toks[self.i + 1][1] == "=":
            key = self.next()[1]
            self.next()
            raw[key] = self.parse_literal()
        types = []
        if self.at(":"):
            self.next()
            types.append(self.parse_type())
            while self.at(","):
                self.next()
                types.append(self.parse_type())
        loc = None
        if self.toks[self.i][0] == "comment":
            loc = self.next()[1][1:].strip() or None
        if self.toks[self.i][0] not in ("newline", "eof"):
            raise ParseError(f"line {line}: unexpected {self.toks[self.i][1]!r} after op")
        if len(types) != len(lhs):
            raise ParseError(f"line {line}: {len(lhs)} results but {len(types)} types")
        for k, kind in opdef.attrs.items():
            if kind == "array" and k in raw:
                if not types:
                    raise ParseError(f"line {line}: an array attribute needs a result type")
                try:
                    raw[k] = array_from_text(raw[k], types[0].dtype.np, types[0].shape)
                except (ValueError, TypeError, OverflowError) as e:
                    raise ParseError(f"line {line}: attribute {k} does not fit "
                                     f"{types[0]}: {e}") from None
        try:
            attrs = opdef.normalize_attrs(raw)
        except (IRTypeError, ValueError, TypeError) as e:
            raise ParseError(f"line {line}: {e}") from None
        regions = []
        if opdef.num_regions != 0:
            if self.regions >= MAX_REGION_NESTING:
                raise ParseError(f"line {line}: regions nested more than {MAX_REGION_NESTING} "
                                 "levels deep")
            self.regions += 1
            self.skip_newlines()
            self.expect("{")
            if opdef.num_regions is None:        # as many as are written (cond's branches)
                while True:
                    regions.append(self.parse_function())
                    self.skip_newlines()
                    if not self.at("func"):
                        break
            else:
                for _ in range(opdef.num_regions):
                    regions.append(self.parse_function())
            self.skip_newlines()
            self.expect("}")
            self.regions -= 1
        op = Op(opdef, operands, attrs, types, loc, regions)
        for name, r in zip(lhs, op.results):
            if name in env:
                raise ParseError(f"line {line}: {name} defined twice")
            env[name] = r
        return op


def _string(tok: str, line: int) -> str:
    """A string token's value (JSON, as the printer writes it: data, never code)."""
    try:
        return json.loads(tok)
    except ValueError as e:
        raise ParseError(f"line {line}: invalid string: {e}") from None


def _number(tok: str, line: int):
    """A number token's value; ones Python will not convert (5,000 digits, -nan) are errors."""
    try:
        return parse_scalar(tok)
    except (ValueError, OverflowError):
        digits = f"{len(tok)} characters" if len(tok) > 40 else repr(tok)
        raise ParseError(f"line {line}: invalid number {digits}") from None


def parse(text: str) -> Function:
    """Parse the text form printed by ``print(function)``; verifies the result."""
    from .verifier import verify
    p = _Parser(text)
    try:
        fn = p.parse_function()
        p.skip_newlines()
        if p.peek()[0] != "eof":
            raise ParseError(f"line {p.peek()[2]}: text after the function")
        return verify(fn)
    except (ParseError, VerificationError):
        raise
    except (ValueError, TypeError, OverflowError, IndexError, KeyError, RecursionError,
            MemoryError) as e:
        # A malformed input the checks above did not foresee: still a ParseError, located.
        raise ParseError(f"line {p.line}: malformed IR ({type(e).__name__}: {e})") from None
