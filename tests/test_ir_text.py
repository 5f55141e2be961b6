"""The IR text form: print -> parse -> print is exact, and parsed programs compute the same.

The text form is also the save/load format, so a round trip must keep every value bit-exact
(constants included) and every malformed input must fail with a line number.
"""
import contextlib
import io
import re

import numpy as np
import pytest
from hypothesis import given, settings

from strategies import GENERATORS, random_programs
from tracejit.ir import (OPS, Builder, ParseError, TensorType, VerificationError, as_dtype,
                         interpret, ops, parse, verify)


def assert_same_arrays(got, want):
    """Bitwise for ints and bools; for floats equal with NaN == NaN and signed zeros kept."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            assert np.array_equal(g, w, equal_nan=True)
            assert np.array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(w[~np.isnan(w)]))
        else:
            assert np.array_equal(g, w)


def run_quietly(fn, inputs):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        results = interpret(fn, [x.copy() for x in inputs])
    return results, out.getvalue()


def check_round_trip(fn, inputs):
    text = str(verify(fn))
    parsed = parse(text)
    assert str(parsed) == text
    want, want_out = run_quietly(fn, inputs)
    got, got_out = run_quietly(parsed, inputs)
    assert_same_arrays(got, want)
    assert got_out == want_out  # debug_print formats the same strings


@given(random_programs(max_ops=8))
def test_random_program_round_trips_text_and_results(prog):
    check_round_trip(*prog)


def test_every_op_has_a_program_generator():
    """New ops must get a generator in tests/strategies.py, or round trips never see them."""
    assert sorted(set(OPS) - set(GENERATORS)) == []


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_each_op_round_trips_in_random_programs(name):
    """Drawn with only this op allowed, so rare ops are exercised every run."""
    @settings(max_examples=4)
    @given(random_programs(max_ops=2, allow=[name]))
    def check(prog):
        fn, inputs = prog
        assert name in [op.name for op in fn.ops]
        check_round_trip(fn, inputs)
    check()


# -- specific values the text form must keep exactly -----------------------------------------

@pytest.mark.parametrize("dtype,values", [
    ("f64", [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.1]),
    ("f32", [np.nan, np.inf, -np.inf, -0.0, 0.1, 3.4028235e38, 1e-45]),
    ("i64", [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0]),
    ("i32", [np.iinfo(np.int32).min, np.iinfo(np.int32).max]),
    ("bool", [True, False]),
])
@pytest.mark.parametrize("repeat", [1, 10])  # 10: more than 32 elements, the base64 form
def test_constant_values_survive_round_trip(dtype, values, repeat):
    arr = np.array(values * repeat, dtype=as_dtype(dtype).np)
    b = Builder()
    c = b.emit(ops.constant, [], value=arr).result
    fn = b.build([c])
    text = str(fn)
    assert ("base64" in text) == (arr.size > 32)
    check_round_trip(fn, [])


def test_scalar_and_empty_constants_round_trip():
    b = Builder()
    outs = [b.emit(ops.constant, [], value=v).result
            for v in (np.float32(-0.0), np.int64(7), np.zeros((0, 3), np.int32), np.bool_(True))]
    check_round_trip(b.build(outs), [])


def test_debug_print_strings_with_quotes_hash_colon_and_unicode_round_trip():
    b = Builder()
    x = b.param(TensorType(as_dtype("f32"), (2,)), "x")
    fmt = 'say "hi" # not a comment: naïve ∑ 😀 \\ \n {}'
    b.emit(ops.debug_print, [x], fmt=fmt, loc="m.py:3")
    fn = b.build([])
    assert str(parse(str(fn))) == str(fn)
    assert parse(str(fn)).ops[0].attrs["fmt"] == fn.ops[0].attrs["fmt"]


def test_locations_survive_round_trip():
    b = Builder()
    x = b.param(TensorType(as_dtype("f32"), (2,)), "x")
    y = b.emit(ops.neg, [x], loc="dir with space/model.py:12").result
    fn = parse(str(b.build([y])))
    assert fn.ops[0].loc == "dir with space/model.py:12"


def test_location_with_a_newline_stays_on_its_line():
    b = Builder()
    x = b.param(TensorType(as_dtype("f32"), (2,)), "x")
    y = b.emit(ops.neg, [x], loc="a.py:1\n%9 = frob").result
    fn = b.build([y])
    assert str(parse(str(fn))) == str(fn)


def test_function_name_that_is_not_an_identifier_round_trips():
    """Traced lambdas are called <lambda>."""
    b = Builder("<lambda>")
    x = b.param(TensorType(as_dtype("i32"), ()))
    fn = parse(str(b.build([x])))
    assert fn.name == "<lambda>"


def test_param_named_like_a_fallback_name_stays_distinct():
    """An unnamed param prints as argN; a param already called argN must not collide."""
    b = Builder()
    t = TensorType(as_dtype("f64"), (2,))
    p, q = b.param(t, "arg1"), b.param(t)
    fn = b.build([p, q])
    parsed = parse(str(fn))
    assert len({v.name for v in parsed.params}) == 2
    check_round_trip(fn, [np.ones(2), np.zeros(2)])


def test_parse_accepts_hand_written_text_with_comments_and_blank_lines():
    text = """
    # a hand-written program
    func @f(%x: f32[2,3]) -> (f32[3]) {

      %0 = reduce_sum %x axes=[0] : f32[3]  # here.py:1
      return %0
    }
    """
    fn = parse(text)
    (out,) = fn(np.ones((2, 3), np.float32))
    assert out.tolist() == [2.0, 2.0, 2.0]


# -- malformed text: ParseError with a line number; ill-typed text: VerificationError ---------

HEADER = "func @f(%x: f32[2]) -> (f32[2]) {\n"


@pytest.mark.parametrize("body,line", [
    ("  %0 = frobnicate %x : f32[2]\n  return %0\n}", 2),             # unknown op
    ("  %0 = neg %y : f32[2]\n  return %0\n}", 2),                    # use before definition
    ("  %0 = neg %x : f99[2]\n  return %0\n}", 2),                    # bad dtype
    ("  %0 = neg %x : f32[2.5]\n  return %0\n}", 2),                  # bad dimension
    ("  %0 = neg %x : f32[-2]\n  return %0\n}", 2),                   # negative dimension
    ("  %0 = neg %x : f32[2], f32[2]\n  return %0\n}", 2),            # too many result types
    ("  %0, %1 = neg %x : f32[2]\n  return %0\n}", 2),                # too few result types
    ("  %0 = neg %x : f32[2] garbage\n  return %0\n}", 2),            # trailing garbage
    ("  %0 = neg %x : f32[2]\n  %0 = neg %x : f32[2]\n  return %0\n}", 3),  # defined twice
    ("  %0 = neg %x bogus=1 : f32[2]\n  return %0\n}", 2),            # unknown attribute
    ("  %0 = constant value=[1.0, 2.0, 3.0] : f32[2]\n  return %0\n}", 2),  # wrong size
    ("  %0 = neg %x : f32[2]\n  return %0\n}\nextra", 5),             # text after the function
    ("  %0 = neg %x : f32[2]\n  return %0, %x\n}", 3),                # results disagree with ->
    ("  %0 = neg %x : f32[2]\n  return %0\n", 4),                     # missing }
    ("  %0 = neg %x : f32[2] $\n  return %0\n}", 2),                  # bad character
    ("  %0 = add %x %x : f32[2]\n  return %0\n}", 2),                # missing comma
    ("  %0 = neg %x : f32[2]\n  return %0 %x\n}", 3),                 # missing comma
])
def test_malformed_text_raises_parse_error_with_line(body, line):
    with pytest.raises(ParseError, match=f"line {line}:"):
        parse(HEADER + body)


def test_parameter_defined_twice_is_a_parse_error():
    with pytest.raises(ParseError, match="line 1:.*defined twice"):
        parse("func @f(%x: f32[2], %x: f32[2]) -> (f32[2]) {\n  return %x\n}")


@pytest.mark.parametrize("body", [
    "  %0 = neg %x : f64[2]\n  return %x\n}",                 # result type disagrees with rule
    "  %0 = add %x, %x : f32[3]\n  return %x\n}",             # wrong shape
    "  %0 = exp %i : i32[2]\n  return %x\n}",                 # float-only op on ints
    "  %0 = add %x, %i : f32[2]\n  return %x\n}",             # mismatched operand dtypes
])
def test_ill_typed_text_raises_verification_error(body):
    with pytest.raises(VerificationError):
        parse("func @f(%x: f32[2], %i: i32[2]) -> (f32[2]) {\n" + body)


# -- hostile text: ParseError (or VerificationError), never another exception -----------------


def _nested_calls(depth: int) -> str:
    body = "func @g(%a: f32[]) -> (f32[]) {\n  return %a\n}"
    for _ in range(depth):
        body = ("func @g(%a: f32[]) -> (f32[]) {\n  %0 = call %a : f32[]\n  {\n" + body
                + "\n  }\n  return %0\n}")
    return body


def test_nested_regions_within_the_limit_parse():
    fn = parse(_nested_calls(20))
    assert str(parse(str(fn))) == str(fn)


@pytest.mark.parametrize("text", [
    "func @f(%x: f32[" + "9" * 5000 + "]) -> (f32[2]) {\n  return %x\n}",
    HEADER + "  %0 = constant value=" + "9" * 5000 + " : i64[]\n  return %x\n}",
    HEADER + "  %0 = constant value=" + "[" * 10000 + " : i64[]\n  return %x\n}",
    HEADER + "  %0 = constant value=" + "[" * 10000 + "]" * 10000 + " : i64[]\n  return %x\n}",
    "func @f(%x: f32" + "[" * 10000 + ") -> (f32[2]) {\n  return %x\n}",
    _nested_calls(10000),
    HEADER + "  %0 = constant value=-nan : f32[]\n  return %x\n}",
    HEADER + '  debug_print %x fmt="\\q"\n  return %x\n}',
    HEADER + "  %0 = constant value=99999999999999999999 : i64[]\n  return %x\n}",
    HEADER + '  %0 = constant value=base64"@@" : f32[40]\n  return %x\n}',
    "",
    "func",
], ids=["5000-digit dim", "5000-digit literal", "10000 open brackets", "10000 brackets",
        "10000 brackets in a type", "10000 nested regions", "-nan", "bad string escape",
        "int beyond int64", "bad base64", "empty", "truncated"])
def test_hostile_text_is_a_parse_error(text):
    """5,000 digits exceeded Python's int-str limit (ValueError), deep nesting overflowed the
    stack (RecursionError), -nan was an int() ValueError."""
    with pytest.raises(ParseError, match=r"line \d+:"):
        parse(text)


def _fuzz_corpus() -> list[str]:
    """Printed IR of a few functions: a region (checkpoint), strings (debug_print), a base64
    constant (more than 32 elements), ints, bools, several results."""
    import tracejit
    table = np.linspace(0.0, 1.0, 40)

    def f(x, w):
        h = tracejit.checkpoint(lambda a: np.tanh(a @ w))(x)
        tracejit.debug_print('h "{}"', h.sum())
        return np.maximum(h, 0).mean(axis=1) + (x.sum() * table)[:5], x[np.array([0, 2])] > 0

    def g(a, i):
        return np.where(a > 0, a, -a)[i].astype(np.int32), np.argmax(a, axis=1)

    return [str(tracejit.make_ir(f)(np.ones((5, 4)), np.ones((4, 3)))),
            str(tracejit.make_ir(g)(np.ones((3, 4), np.float32), np.array([1, 0])))]


def _mutate(text: str, rng) -> str:
    alphabet = '[]{}(),:=%@#"-0123456789.e\nabcfi _x'
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        r = rng.random()
        if r < 0.3:
            text = text[:i] + text[i + rng.randint(1, 5):]                  # delete
        elif r < 0.6:
            text = text[:i] + rng.choice(alphabet) + text[i:]               # insert
        elif r < 0.8:
            text = text[:i] + rng.choice(alphabet) + text[i + 1:]           # replace
        else:
            j = rng.randrange(len(text) + 1)                                # duplicate a span
            a, b = sorted((i, j))
            text = text[:a] + text[a:b] * 2 + text[b:]
    return text


def test_mutated_text_parses_or_raises_parse_or_verification_error():
    import random
    rng = random.Random(20240611)
    corpus = _fuzz_corpus()
    outcomes = {"parsed": 0, "ParseError": 0, "VerificationError": 0}
    for _ in range(500):
        text = _mutate(rng.choice(corpus), rng)
        try:
            fn = parse(text)
        except (ParseError, VerificationError) as e:
            outcomes[type(e).__name__] += 1
            if isinstance(e, ParseError):
                assert re.match(r"line \d+:", str(e)), (str(e), text)
        else:
            verify(fn)
            assert str(parse(str(fn))) == str(fn)
            outcomes["parsed"] += 1
    assert outcomes["ParseError"] > 100 and outcomes["parsed"] > 5, outcomes
