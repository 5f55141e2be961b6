"""tracejit.cond / switch / while_loop / fori_loop / scan: JAX's argument order and semantics,
eagerly and under a trace (one op whose bodies are regions), with errors that name the
mismatch and the user's line. Traced runs use the interpreter backend here (the semantics);
tests/test_control_flow_codegen.py runs the compiled backends."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import make_ir
from tracejit.tracer.control_flow import ControlFlowTypeError
from tracejit.tracer.errors import ConcretizationError


def ijit(f, **kw):
    return tj.jit(f, backend="interpreter", **kw)


def same(got, want):
    gl, wl = tj.tree_map(np.asarray, got), tj.tree_map(np.asarray, want)
    from tracejit.tracer.pytree import flatten
    g, gt = flatten(gl)
    w, wt = flatten(wl)
    assert gt == wt
    for a, b in zip(g, w):
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def ops_of(fn, *args):
    return [op.name for op in make_ir(fn)(*args).ops]


rng = np.random.default_rng(0)
X = rng.standard_normal(4)


def test_cond_takes_the_branch_of_a_traced_predicate_and_matches_eager():
    def f(x):
        return tj.cond(x.sum() > 0, lambda a, b: (a * 2, b), lambda a, b: (a - 1.0, -b), x, 3.0)
    for x in (X, -np.abs(X)):
        same(ijit(f)(x), f(x))
    assert "cond" in ops_of(f, X)


def test_switch_clamps_its_index_as_jax_does():
    branches = [lambda a: a, lambda a: -a, lambda a: a * a]

    def f(x, i):
        return tj.switch(i, branches, x)
    for i in (-3, 0, 1, 2, 7):
        same(ijit(f)(X, np.int64(i)), f(X, i))
        same(ijit(f)(X, np.int64(i)), branches[min(max(i, 0), 2)](X))


def test_cond_with_a_concrete_predicate_runs_one_branch_under_a_trace():
    def f(x):
        return tj.cond(True, lambda a: a + 1, lambda a: a.no_such_method(), x)
    same(ijit(f)(X), X + 1)
    assert "cond" not in ops_of(f, X)


def test_branches_may_close_over_traced_values():
    def f(x, y):
        return tj.cond(x[0] > 0, lambda a: a * y, lambda a: a + y.sum(), x)
    y = rng.standard_normal(4)
    same(ijit(f)(X, y), f(X, y))
    ir = make_ir(f)(X, y)
    op = [op for op in ir.ops if op.name == "cond"][0]
    assert ir.params[1] in op.operands        # the captured y, an explicit operand


def test_branches_returning_different_types_name_the_result_and_the_line():
    def f(x):
        return tj.cond(x[0] > 0, lambda a: a, lambda a: a.astype(np.float32), x)
    with pytest.raises(ControlFlowTypeError, match=r"true_fun result\[0\] is f64\[4\] but "
                       r"false_fun's is f32\[4\] at .*test_control_flow_api.py"):
        make_ir(f)(X)


def test_a_weak_python_number_result_takes_the_other_branch_dtype():
    def f(x):
        return tj.cond(x[0] > 0, lambda a: a.sum(), lambda a: 0.0, x.astype(np.float32))
    ir = make_ir(f)(X)
    assert [str(t) for t in ir.result_types] == ["f32[]"]
    same(ijit(f)(X), f(X).astype(np.float32) if np.ndim(f(X)) else np.float32(f(X)))


def test_while_loop_runs_a_data_dependent_number_of_times():
    def f(x):
        return tj.while_loop(lambda c: c[1].sum() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0),
                             (0, np.abs(x) + 0.1))
    same(ijit(f)(X), f(X))
    assert ops_of(f, X).count("while_loop") == 1


def test_while_loop_may_run_zero_times():
    def f(x):
        return tj.while_loop(lambda v: v.sum() > 1e9, lambda v: v * 2.0, x)
    same(ijit(f)(X), X)


def test_fori_loop_with_static_bounds_is_a_scan_and_with_traced_bounds_a_while_loop():
    def static(x):
        return tj.fori_loop(1, 6, lambda i, v: v * 0.5 + i, x)

    def traced(x, n):
        return tj.fori_loop(0, n, lambda i, v: v * 0.5 + i, x)
    same(ijit(static)(X), static(X))
    same(ijit(traced)(X, np.int64(5)), traced(X, 5))
    assert "scan" in ops_of(static, X) and "while_loop" in ops_of(traced, X, np.int64(5))


@pytest.mark.parametrize("backend", ["interpreter", "numpy", None])
def test_a_loop_body_indexes_a_closed_over_array_with_its_index(backend):
    # x[i] with x from outside and i the body's index is taken inside the body: it once went
    # to x's (outer) trace, which captured i as a parameter nobody passed
    x = np.arange(5.0)

    def f(x):
        def body(i, acc):
            return acc + x[i] * x[[i, 0]].sum()
        return tj.fori_loop(0, 5, body, 0.0)

    assert tj.jit(f, backend=backend)(x) == f(x) == sum(x[i] * (x[i] + x[0]) for i in range(5))


def test_fori_loop_index_is_weak_so_float32_stays_float32():
    x = X.astype(np.float32)
    f = ijit(lambda x: tj.fori_loop(0, 3, lambda i, v: v + i, x))
    out = f(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x + 3.0)


def test_scan_stacks_ys_over_pytrees_and_matches_eager():
    def f(h, xs, w):
        def step(carry, x):
            h, n = carry
            h = np.tanh(h @ w + x["a"] * x["b"])
            return (h, n + 1), {"h": h, "s": h.sum()}
        return tj.scan(step, (h, 0), {"a": xs, "b": xs[:, ::-1]})
    h, xs, w = np.zeros(3), rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    same(ijit(f)(h, xs, w), f(h, xs, w))
    assert ops_of(f, h, xs, w).count("scan") == 1


def test_reverse_scan_puts_each_y_at_its_x_position():
    def f(xs):
        return tj.scan(lambda c, x: (c + x, c), 0.0, xs, reverse=True)
    xs = np.arange(1.0, 5.0)
    carry, ys = f(xs)
    np.testing.assert_allclose(ys, [9.0, 7.0, 4.0, 0.0])
    same(ijit(f)(xs), (carry, ys))


def test_scan_without_xs_needs_length_and_y_none_stacks_nothing():
    def f(x):
        return tj.scan(lambda c, _: (c * 2.0, None), x, None, length=4)
    same(ijit(f)(X), f(X))
    assert f(X)[1] is None
    with pytest.raises(ControlFlowTypeError, match="no xs and no length"):
        tj.scan(lambda c, _: (c, None), X, None)


def test_scan_carry_that_changes_type_names_the_carry_and_the_line():
    def f(x):
        return tj.scan(lambda c, x: ((c[0], c[1].astype(np.float32)), None), (x, x), x)
    with pytest.raises(ControlFlowTypeError, match=r"carry\[1\] changed from f64\[4\] to "
                       r"f32\[4\] at .*test_control_flow_api.py"):
        make_ir(f)(X)


def test_a_weak_initial_carry_takes_the_dtype_the_body_gives_it():
    def f(xs):
        return tj.scan(lambda c, x: (c + x, None), 0.0, xs)[0]
    xs = rng.standard_normal(3).astype(np.float32)
    out = ijit(f)(xs)
    assert out.dtype == np.float32 and out.shape == ()
    np.testing.assert_allclose(out, xs.sum(), rtol=1e-6)


def test_nested_loops_and_branches_trace_one_body_each():
    def f(xs):
        def outer(c, row):
            inner = tj.fori_loop(0, 3, lambda i, v: tj.cond(i % 2 == 0, lambda a: a + row,
                                                            lambda a: a * 0.5, v), c)
            return inner, inner.sum()
        return tj.scan(outer, np.zeros(2), xs)
    xs = rng.standard_normal((4, 2))
    same(ijit(f)(xs), f(xs))
    assert ops_of(f, xs).count("scan") == 1


def test_a_hundred_step_loop_is_one_body_in_the_ir():
    def f(x):
        return tj.fori_loop(0, 100, lambda i, v: np.sin(v) + 0.1, x)
    ir = make_ir(f)(X)
    assert len(ir.ops) < 10
    same(ijit(f)(X), f(X))


@pytest.mark.parametrize("body, hint", [
    ("if x.sum() > 0:\n        x = -x", r"tracejit\.cond\(pred, true_fn, false_fn"),
    ("while x.sum() < 10:\n        x = x * 2", r"tracejit\.while_loop\(cond_fn, body_fn"),
    ("for i in range(n):\n        x = x + 1", r"tracejit\.fori_loop\(lower, upper"),
])
def test_python_control_flow_on_traced_values_suggests_the_primitive(tmp_path, body, hint):
    src = f"def f(x, n):\n    {body}\n    return x\n"
    path = tmp_path / "model.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    with pytest.raises(ConcretizationError, match=hint) as e:
        make_ir(ns["f"])(np.ones(3), 3)
    assert "model.py:2" in str(e.value)


def test_min_char_rnn_with_scan_has_the_unrolled_loss_and_gradients():
    from tracejit.demo import char_rnn as rnn
    vocab = 7
    params = rnn.init(vocab)
    eye = np.eye(vocab)
    data = np.random.default_rng(1).integers(0, vocab, 6)
    args = (params, eye[data[:-1]], eye[data[1:]], np.full(rnn.HIDDEN, 0.1))
    got = ijit(tj.value_and_grad(rnn.loss_scan, has_aux=True))(*args)
    want = ijit(tj.value_and_grad(rnn.loss_unrolled, has_aux=True))(*args)
    from tracejit.tracer.pytree import flatten
    for g, w in zip(flatten(got)[0], flatten(want)[0]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
