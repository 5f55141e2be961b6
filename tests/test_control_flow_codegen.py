"""cond, while_loop and scan compiled: a cond as branches in the entry, a loop as one native
module (no Python per iteration), a body no native module can run as a Python loop in the
entry; and the NumPy tier running the regions' programs. Every case against the reference
interpreter. Shapes are shared (f32[4,8]) so that the cases share compiled kernels."""
import re

import numpy as np
import pytest

import tracejit as tj

rng = np.random.default_rng(0)
H = rng.standard_normal((4, 8)).astype(np.float32)
XS = rng.standard_normal((5, 4, 8)).astype(np.float32)
W = (rng.standard_normal((8, 8)) * 0.3).astype(np.float32)
U = (rng.standard_normal((8, 8)) * 0.3).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)

BACKENDS = {"numba": dict(tiered=False), "numpy": dict(backend="numpy")}


def check(f, *args):
    """``f`` on each backend equals the interpreter's result; the numba program's source."""
    want = tj.jit(f, backend="interpreter")(*args)
    for name, kw in BACKENDS.items():
        got = tj.jit(f, **kw)(*args)
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            assert np.asarray(g).dtype == np.asarray(w).dtype, name
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=name)
    return tj.jit(f, tiered=False).lower(*args).source


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _branches():
    return [lambda x: x * 2.0, lambda x: np.tanh(x), lambda x: x - 1.0]


def cell(h, x):
    """An RNN cell: tanh(h @ W + x @ U + b), and the sum of the new state as its y."""
    h = np.tanh(h @ W + x @ U + B)
    return h, h.sum()


@pytest.mark.parametrize("index", [-2, 0, 1, 2, 7])
def test_switch_runs_the_clamped_branch(index):
    source = check(lambda i, x: tj.switch(i, _branches(), x), np.int32(index), H)
    assert "elif" in source and "else:" in source


def test_scan_of_an_rnn_cell_is_one_native_module_with_no_python_loop():
    source = check(lambda h, xs: tj.scan(cell, h, xs), H, XS)
    entry = source.split("# entry")[1]
    assert "for " not in entry and "while" not in entry
    assert "for t" in source.split("# entry")[0]


def test_scan_reverse_writes_each_y_at_its_iteration():
    check(lambda h, xs: tj.scan(cell, h, xs, reverse=True), H, XS)


def test_scan_with_0d_and_int_carries_and_1d_xs():
    def f(h, xs):
        def body(c, x):
            h, n, total = c
            h = h * x + 1.0
            return (h, n + np.int32(1), total + x), n * 2
        return tj.scan(body, (h, np.int32(3), np.float32(0)), xs)
    check(f, H, np.linspace(0.5, 1.0, 6, dtype=np.float32))


def test_scan_of_carries_only_by_fori_loop():
    check(lambda h: tj.fori_loop(0, 4, lambda i, h: np.tanh(h * 0.5 + 1.0), h), H)


def test_switch_inside_scan():
    def f(h, xs):
        def body(h, x):
            k = (x.sum() > 0).astype(np.int32) + (x.sum() > 2).astype(np.int32)
            h = tj.switch(k, _branches(), h + x)
            return h, h.sum()
        return tj.scan(body, h, xs)
    check(f, H, XS)


def test_nested_scan_in_scan():
    def f(h, xs):
        def outer(h, x):
            h, _ = tj.scan(lambda c, r: (c * 0.5 + r, c.sum()), h, np.stack([x, x * 2.0]))
            return h, h
        return tj.scan(outer, h, xs)
    source = check(f, H, XS)
    assert source.split("# entry")[0].count("for t") >= 2


@pytest.mark.parametrize("limit", [0.0, 20.0])
def test_while_loop_data_dependent_and_zero_iterations(limit):
    def f(h, limit):
        return tj.while_loop(lambda c: c[1] < limit, lambda c: (c[0] * 1.5 + 0.1, c[1] + 1.0 +
                                                                 np.abs(c[0]).max()),
                             (h, np.float32(0)))
    check(f, H, np.float32(limit))


def test_body_without_native_code_runs_as_a_python_loop_and_says_so():
    def f(h, xs):
        return tj.scan(lambda h, x: (np.sort(h + x, axis=1), h.sum()), h, xs)
    source = check(f, H, XS)
    assert "a Python loop in the entry" in source and "sort" in source


def test_a_loop_body_that_concatenates_is_compiled_directly_on_every_axis():
    """The driver wrote np.stack/np.concatenate in a body as a slice assignment, which
    codegen/direct refuses: the whole loop went to Numba (a nested scan's test: 5 s)."""
    from tracejit.codegen import direct

    def g(h, xs):
        def body(c, x):
            y = np.concatenate([x, c * 2.0], axis=1)           # (4, 16)
            z = np.concatenate([y[:, :8], x], axis=0)          # (8, 8)
            return c + z[:4] + y[:, 8:], z.sum()
        return tj.scan(body, h, xs)
    before = set(direct.refused())
    check(g, H, XS)
    assert set(direct.refused()) == before


def test_a_carry_computed_by_a_body_kernel_swaps_buffers_instead_of_being_copied():
    source = check(lambda h, xs: tj.scan(cell, h, xs), H, XS)
    loop = _loop_lines(source)
    # the carry h takes the kernel's output buffer, whose name swaps with a spare's
    assert any(re.fullmatch(r"\s*(b\d+), (b\d+) = \2, \1", line) for line in loop), loop
    assert not any("copy_elements" in line for line in loop), loop


@pytest.mark.parametrize("case", ["swapped", "twice", "kept", "nested", "while"])
def test_carries_that_swap_repeat_or_pass_through_match_the_interpreter(case):
    """Carries taking over their kernels' buffers: a carry passed on as another (a swap), one
    result given to two carries, an unchanged carry beside a changing one, a nested loop's
    carries, and a while loop's."""
    if case == "swapped":
        f = lambda a, b: tj.scan(lambda c, x: ((np.tanh(c[1] + x), c[0] * 0.5), c[0].sum()),
                                 (a, b), XS)
    elif case == "twice":
        f = lambda a, b: tj.scan(lambda c, x: ((np.tanh(c[0] @ W + x),) * 2, c[1].sum()),
                                 (a, b), XS)
    elif case == "kept":
        f = lambda a, b: tj.scan(lambda c, x: ((c[0], np.tanh(c[1] @ W + x + c[0])),
                                               c[1].sum()), (a, b), XS)
    elif case == "nested":
        def f(a, b):
            def outer(c, x):
                inner, _ = tj.scan(lambda d, y: (np.tanh(d @ U + y), y.sum()), c, XS[:3])
                return inner + x, inner.sum()
            return tj.scan(outer, a + b, XS)
    else:
        f = lambda a, b: tj.while_loop(lambda c: c[2] < 4,
                                       lambda c: (np.tanh(c[1] @ W), c[0] + 1.0, c[2] + 1),
                                       (a, b, np.int32(0)))
    check(f, H, H * 0.5)


def _loop_lines(source: str) -> list:
    """The statements inside the first native driver's ``for t`` loop."""
    lines = source.split("# entry")[0].splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("for t"))
    depth = len(lines[start]) - len(lines[start].lstrip())
    loop = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= depth:
            break
        loop.append(line)
    return loop


@pytest.mark.parametrize("length", [0, 1, 5])
def test_a_gradient_accumulated_over_steps_is_updated_in_place_by_blas(length):
    """``dW + x.T @ d`` as a carry's next value: one gemm adding to the carry's own buffer
    (the first step copies the loop's operand there), no copy and no swap of that carry."""
    def f(dw, db, xs):
        def step(c, x):
            dw, db = c
            d = np.tanh(x @ W)
            return (dw + x.T @ d, db + d.sum(axis=0)), d.sum()
        return tj.scan(step, (dw, db), xs)
    dw0 = rng.standard_normal((8, 8)).astype(np.float32)
    source = check(f, dw0, B, XS[:length])
    if length:
        assert re.search(r"gemm\(.*, 1\)", source)
        loop = _loop_lines(source)
        swaps = [line for line in loop if re.fullmatch(r"\s*(b\d+), (b\d+) = \2, \1", line)]
        # db (a sum, not a product) swaps buffers; dw keeps its own
        assert len(swaps) == 1 and not any("copy_elements" in line for line in loop), loop


def test_a_carry_read_again_after_its_update_is_not_updated_in_place():
    """The carry is also returned as a y, and read by a second op: its old value is needed
    after the product is added, so the kernel writes a buffer of its own."""
    def f(dw, xs):
        def step(dw, x):
            new = dw + x.T @ np.tanh(x @ W)
            return new, dw * 2.0
        return tj.scan(step, dw, xs)
    check(f, rng.standard_normal((8, 8)).astype(np.float32), XS)
    check(lambda dw, xs: tj.scan(lambda c, x: (c + x.T @ x, c), dw, xs),
          rng.standard_normal((8, 8)).astype(np.float32), XS)
