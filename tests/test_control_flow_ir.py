"""cond, while_loop and scan in the IR: text form, verifier, reference semantics, passes.

The interpreter's semantics are pinned against plain Python loops over NumPy (cond clamps its
index like ``jax.lax.switch``; ``ys[i]`` of a reversed scan belongs to iteration ``i``). Every
pass must keep a Function with regions meaning the same (interpreted before and after), on
hand-made programs and on ``control_flow_programs`` (tests/strategies.py).
"""
import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import control_flow_programs
from tracejit.ir import (Builder, Function, TensorType, VerificationError, as_dtype, interpret,
                         ops, parse, verify)
from tracejit.ir.passes import cse, dce, fold_constants, inline_calls, optimize, simplify
from tracejit.ir.passes.liveness import liveness


def T(dtype="f32", *shape):
    return TensorType(as_dtype(dtype), shape)


I32 = T("i32")


def unary_body(name, opdef, t=T("f32", 3)):
    """A Function of one param of type t returning opdef(param) (or the param, for None)."""
    b = Builder(name)
    p = b.param(t, "p")
    return b.build([b.emit(opdef, [p]).result if opdef else p])


def cond_function(n_branches=3):
    """main(i, x) = branches[clamp(i)](x) with branches neg, exp, identity."""
    branch_ops = [ops.neg, ops.exp, None][:n_branches]
    b = Builder("main")
    i, x = b.param(I32, "i"), b.param(T("f32", 3), "x")
    c = b.emit(ops.cond, [i, x], regions=[unary_body(f"b{k}", o) for k, o in
                                          enumerate(branch_ops)])
    return verify(b.build(c.results)), branch_ops


def scan_function(reverse=False, with_xs=True, n=4):
    """carry' = carry * w + x; y = carry (before the update); w is a const."""
    body = Builder("body")
    w, h = body.param(T("f32", 3), "w"), body.param(T("f32", 3), "h")
    new = body.emit(ops.mul, [h, w]).result
    if with_xs:
        new = body.emit(ops.add, [new, body.param(T("f32", 3), "x")]).result
    b = Builder("main")
    W, H = b.param(T("f32", 3), "W"), b.param(T("f32", 3), "H")
    xs = [b.param(T("f32", n, 3), "xs")] if with_xs else []
    s = b.emit(ops.scan, [W, H] + xs, regions=[body.build([new, h])], consts=1, carries=1,
               length=n, reverse=reverse)
    return verify(b.build(s.results))


def while_function():
    """Counts i up from its start while i < bound (a const), doubling x each step."""
    cond_fn = Builder("cond_fn")
    bound, i, x = (cond_fn.param(t) for t in (I32, I32, T("f64", 2)))
    cond_fn = cond_fn.build([cond_fn.emit(ops.lt, [i, bound]).result])
    body = Builder("body_fn")
    _, i, x = (body.param(t) for t in (I32, I32, T("f64", 2)))
    one = body.emit(ops.constant, [], value=np.int32(1)).result
    body = body.build([body.emit(ops.add, [i, one]).result, body.emit(ops.add, [x, x]).result])
    b = Builder("main")
    operands = [b.param(t, n) for t, n in ((I32, "bound"), (I32, "i"), (T("f64", 2), "x"))]
    w = b.emit(ops.while_loop, operands, regions=[cond_fn, body], consts=1)
    return verify(b.build(w.results))


def nested_function():
    """A scan whose body holds a cond on a carried counter k (0, 1, 0, ...): h' = -h when
    k == 0, else h; y = h."""
    branches = [unary_body("neg", ops.neg), unary_body("same", None)]
    body = Builder("body")
    k, h = body.param(I32, "k"), body.param(T("f32", 3), "h")
    c = body.emit(ops.cond, [k, h], regions=branches).result
    one = body.emit(ops.constant, [], value=np.int32(1)).result
    body = body.build([body.emit(ops.sub, [one, k]).result, c, h])
    b = Builder("main")
    k0, h0 = b.param(I32, "k0"), b.param(T("f32", 3), "h0")
    s = b.emit(ops.scan, [k0, h0], regions=[body], consts=0, carries=2, length=3, reverse=False)
    return verify(b.build(s.results))


def same_arrays(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w, equal_nan=w.dtype.kind == "f"), (g, w)


def run_quietly(fn, inputs):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        results = interpret(fn, [np.copy(x) for x in inputs])
    return results, out.getvalue()


rng = np.random.default_rng(0)
X3 = rng.standard_normal(3).astype(np.float32)


# -- text form ---------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: cond_function(1)[0], lambda: cond_function(2)[0], lambda: cond_function(3)[0],
    lambda: scan_function(), lambda: scan_function(reverse=True),
    lambda: scan_function(with_xs=False), while_function, nested_function,
], ids=["cond1", "cond2", "cond3", "scan", "scan-reverse", "scan-no-xs", "while", "nested"])
def test_control_flow_text_round_trips(make):
    fn = make()
    text = str(fn)
    parsed = verify(parse(text))
    assert str(parsed) == text
    assert [op.name for op in parsed.ops] == [op.name for op in fn.ops]


def test_cond_prints_each_branch_between_one_pair_of_braces():
    text = str(cond_function(3)[0])
    assert text.count("func @b") == 3 and text.count("  {\n") == 1


# -- verifier -------------------------------------------------------------------------------

def _retyped_region(fn: Function, k: int, region: Function) -> Function:
    """fn with region k of its first region-holding op replaced (no type check here)."""
    op = next(op for op in fn.ops if op.regions)
    op.regions = op.regions[:k] + [region] + op.regions[k + 1:]
    return fn


def test_verifier_names_the_carry_whose_type_changed():
    fn = scan_function()
    body = fn.ops[0].regions[0]
    b = Builder("body")
    params = [b.param(p.type) for p in body.params]
    new = b.emit(ops.convert, [params[1]], dtype="float64").result
    with pytest.raises(VerificationError, match=r"carry\[0\] changed from f32\[3\] to f64\[3\]"):
        verify(_retyped_region(fn, 0, b.build([new, params[1]])))


def test_verifier_names_the_branch_whose_results_differ():
    fn, _ = cond_function(2)
    b = Builder("b1")
    p = b.param(T("f32", 3))
    bad = b.build([b.emit(ops.convert, [p], dtype="float64").result])
    with pytest.raises(VerificationError, match=r"cond branch 1 results: result\[0\] changed"):
        verify(_retyped_region(fn, 1, bad))


def test_verifier_rejects_a_while_condition_that_is_not_a_bool_scalar():
    fn = while_function()
    b = Builder("cond_fn")
    params = [b.param(t) for t in (I32, I32, T("f64", 2))]
    with pytest.raises(VerificationError, match="cond_fn must return one bool"):
        verify(_retyped_region(fn, 0, b.build([params[1]])))


def test_verifier_says_a_region_closes_over_a_value_of_its_enclosing_function():
    b = Builder("main")
    x = b.param(T("f32", 3), "x")
    outer = b.emit(ops.exp, [x]).result
    inner = Builder("branch")
    p = inner.param(T("f32", 3))
    branch = inner.build([inner.emit(ops.add, [p, outer]).result])   # reads ``outer``
    c = b.emit(ops.cond, [b.param(I32), x], regions=[branch])
    with pytest.raises(VerificationError,
                       match=r"@main op 1 \(cond\) / @branch op 0 .*enclosing function"):
        verify(b.build(c.results))


def test_verifier_says_a_region_returns_a_value_of_its_enclosing_function():
    b = Builder("main")
    x = b.param(T("f32", 3), "x")
    inner = Builder("branch")
    inner.param(T("f32", 3))
    c = b.emit(ops.cond, [b.param(I32), x], regions=[inner.build([x])])
    with pytest.raises(VerificationError, match="result .* enclosing function"):
        verify(b.build(c.results))


def test_scan_rejects_xs_whose_leading_axis_is_not_the_length():
    with pytest.raises(Exception, match=r"xs\[0\] is f32\[5,3\]"):
        b = Builder()
        body = scan_function().ops[0].regions[0]
        b.emit(ops.scan, [b.param(T("f32", 3)), b.param(T("f32", 3)), b.param(T("f32", 5, 3))],
               regions=[body], consts=1, carries=1, length=4, reverse=False)


# -- reference semantics against plain Python loops ------------------------------------------

@given(st.integers(-5, 7), st.sampled_from([1, 2, 3]))
def test_cond_runs_the_branch_of_its_index_clamped_like_lax_switch(index, n):
    fn, branch_ops = cond_function(n)
    (got,) = fn(np.int32(index), X3)
    chosen = branch_ops[min(max(index, 0), n - 1)]
    want = X3 if chosen is None else chosen.impl(X3)
    same_arrays([got], [want])


@given(st.integers(-3, 5), st.integers(-3, 5))
def test_while_loop_runs_its_body_while_the_condition_holds(bound, start):
    x = np.array([1.5, -2.0])
    i_got, x_got = while_function()(np.int32(bound), np.int32(start), x)
    i, want = start, x
    while i < bound:
        i, want = i + 1, want + want
    same_arrays([i_got, x_got], [np.int32(i), want])


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_xs", [False, True])
def test_scan_ys_at_position_i_belong_to_iteration_i(reverse, with_xs):
    w, h = np.float32([0.5, -1.0, 2.0]), X3
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    fn = scan_function(reverse, with_xs)
    got = fn(w, h, *([xs] if with_xs else []))
    ys = np.empty((4, 3), np.float32)
    for i in (reversed(range(4)) if reverse else range(4)):
        ys[i] = h
        h = h * w + (xs[i] if with_xs else 0)
    same_arrays(got, [h, ys])


def test_scan_of_length_zero_returns_its_carries_and_empty_ys():
    b = Builder("main")
    W, H = b.param(T("f32", 3)), b.param(T("f32", 3))
    body = scan_function(with_xs=False).ops[0].regions[0]
    s = b.emit(ops.scan, [W, H], regions=[body], consts=1, carries=1, length=0, reverse=True)
    h, ys = verify(b.build(s.results))(X3, X3)
    same_arrays([h], [X3])
    assert ys.shape == (0, 3) and ys.dtype == np.float32


def test_nested_cond_in_scan_alternates_branches():
    k, h, ys = nested_function()(np.int32(0), X3)
    same_arrays([k, h, ys], [np.int32(1), X3, np.stack([X3, -X3, -X3])])


# -- passes -------------------------------------------------------------------------------

def _names(fn):
    return [op.name for op in fn.ops]


def _region_with(build_body):
    """main(x) = scan over 2 steps (no consts, one carry) of the body built by build_body."""
    body = Builder("body")
    h = body.param(T("f32", 3), "h")
    outs = build_body(body, h)
    b = Builder("main")
    x = b.param(T("f32", 3), "x")
    s = b.emit(ops.scan, [x], regions=[body.build(outs)], consts=0, carries=1, length=2,
               reverse=False)
    return verify(b.build(s.results))


def test_optimize_cleans_every_region_and_keeps_its_type():
    def body(b, h):
        call_body = unary_body("callee", ops.exp)
        called = b.emit(ops.call, [h], regions=[call_body]).result      # inlined
        again = b.emit(ops.exp, [h]).result                              # CSE with it
        two = b.emit(ops.constant, [], value=np.float32(2)).result
        four = b.emit(ops.add, [two, two]).result                        # folded
        b.emit(ops.tanh, [h])                                            # dead
        scaled = b.emit(ops.mul, [called, b.emit(ops.broadcast_in_dim, [four], shape=(3,),
                                                  dims=()).result]).result
        return [b.emit(ops.add, [scaled, again]).result, h]
    fn = _region_with(body)
    opt = verify(optimize(fn))
    region = opt.ops[0].regions[0]
    assert _names(region).count("exp") == 1
    assert "call" not in _names(region) and "tanh" not in _names(region)
    assert "add" in _names(region) and _names(region).count("constant") == 1
    assert region.param_types == fn.ops[0].regions[0].param_types
    same_arrays(opt(X3), fn(X3))


def test_cse_never_merges_control_ops_and_fold_never_folds_them():
    b = Builder("main")
    i = b.emit(ops.constant, [], value=np.int32(1)).result
    x = b.emit(ops.constant, [], value=np.float32([1, 2, 3])).result
    branches = [unary_body("n", ops.neg), unary_body("e", ops.exp)]
    c1 = b.emit(ops.cond, [i, x], regions=branches).result
    c2 = b.emit(ops.cond, [i, x], regions=branches).result
    fn = verify(b.build([c1, c2]))
    assert _names(cse(fn)).count("cond") == 2
    assert _names(fold_constants(fn)).count("cond") == 2


def _printing_branch():
    b = Builder("loud")
    p = b.param(T("f32", 3))
    b.emit(ops.debug_print, [p], fmt="x = {}")
    return b.build([p])


def test_dce_keeps_an_unused_control_op_whose_region_prints_and_drops_a_silent_one():
    b = Builder("main")
    i, x = b.param(I32, "i"), b.param(T("f32", 3), "x")
    b.emit(ops.cond, [i, x], regions=[unary_body("quiet", ops.neg), _printing_branch()])
    b.emit(ops.cond, [i, x], regions=[unary_body("a", ops.neg), unary_body("b", ops.exp)])
    fn = verify(b.build([x]))
    kept = dce(fn)
    assert _names(kept) == ["cond"] and kept.ops[0].regions[1].name == "loud"
    assert _names(optimize(fn)) == ["cond"]
    assert run_quietly(optimize(fn), [np.int32(1), X3])[1] == run_quietly(fn, [np.int32(1),
                                                                                X3])[1]


def test_scan_drops_ys_nobody_uses_and_operands_its_body_never_reads():
    body = Builder("body")
    unused_const = body.param(T("f64", 2), "c")
    h, x, _ = body.param(T("f32", 3), "h"), body.param(T("f32", 3), "x"), body.param(I32, "z")
    y_dead = body.emit(ops.tanh, [h]).result
    y_live = body.emit(ops.neg, [x]).result
    body = body.build([body.emit(ops.add, [h, x]).result, y_dead, y_live])
    b = Builder("main")
    params = [b.param(t) for t in (T("f64", 2), T("f32", 3), T("f32", 4, 3), T("i32", 4))]
    s = b.emit(ops.scan, params, regions=[body], consts=1, carries=1, length=4, reverse=True)
    fn = verify(b.build([s.results[0], s.results[2]]))
    opt = verify(optimize(fn))
    (scan,) = opt.ops
    assert len(scan.results) == 2 and scan.attrs["consts"] == 0
    assert scan.operands == params[1:3]
    assert "tanh" not in _names(scan.regions[0])
    args = [np.zeros(2), X3, rng.standard_normal((4, 3)).astype(np.float32),
            np.arange(4, dtype=np.int32)]
    same_arrays(opt(*args), fn(*args))
    assert unused_const not in scan.regions[0].params


@pytest.mark.parametrize("index,names", [(-2, ["neg"]), (0, ["neg"]), (1, ["exp"]), (2, []),
                                         (7, [])])
def test_cond_on_a_constant_index_becomes_its_clamped_branch(index, names):
    b = Builder("main")
    x = b.param(T("f32", 3), "x")
    i = b.emit(ops.constant, [], value=np.int32(index)).result
    branches = [unary_body("n", ops.neg), unary_body("e", ops.exp), unary_body("id", None)]
    c = b.emit(ops.cond, [i, x], regions=branches)
    fn = verify(b.build(c.results))
    opt = verify(optimize(fn))
    assert _names(opt) == names
    same_arrays(opt(X3), fn(X3))


def test_a_cond_with_one_branch_becomes_that_branch():
    opt = verify(optimize(cond_function(1)[0]))
    assert _names(opt) == ["neg"]


def test_inline_calls_and_liveness_pass_over_control_ops():
    fn = nested_function()
    b = Builder("main")
    k, h = b.param(I32), b.param(T("f32", 3))
    c = b.emit(ops.call, [k, h], regions=[fn])
    outer = verify(b.build(c.results))
    flat = verify(inline_calls(outer))
    assert _names(flat) == ["scan"]
    same_arrays(flat(np.int32(0), X3), fn(np.int32(0), X3))
    assert liveness(outer).peak_bytes > 0


PASSES = {"simplify": simplify, "fold": fold_constants, "cse": cse, "dce": dce,
          "inline": inline_calls, "optimize": optimize}


@pytest.mark.parametrize("make", [lambda: cond_function(3)[0], scan_function, while_function,
                                  nested_function], ids=["cond", "scan", "while", "nested"])
@pytest.mark.parametrize("name", sorted(PASSES))
def test_each_pass_keeps_the_meaning_of_hand_made_control_flow(make, name):
    fn = make()
    args = [np.zeros(p.type.shape, p.type.dtype.np) + 1 for p in fn.params]
    same_arrays(verify(PASSES[name](fn))(*args), fn(*args))


# -- random programs with control flow --------------------------------------------------------

@settings(max_examples=60)
@given(control_flow_programs())
def test_random_control_flow_programs_round_trip_and_survive_every_pass(prog):
    fn, inputs = prog
    text = str(verify(fn))
    assert str(parse(text)) == text
    want, want_out = run_quietly(fn, inputs)
    for name, run_pass in PASSES.items():
        got, got_out = run_quietly(verify(run_pass(fn)), inputs)
        same_arrays(got, want)
        assert got_out == want_out, name


@settings(max_examples=20)
@given(control_flow_programs(body_ops=("add", "mul", "neg", "exp", "cond", "debug_print")))
def test_random_loops_with_prints_in_their_bodies_print_the_same_after_optimize(prog):
    fn, inputs = prog
    want, want_out = run_quietly(fn, inputs)
    got, got_out = run_quietly(verify(optimize(fn)), inputs)
    same_arrays(got, want)
    assert got_out == want_out
