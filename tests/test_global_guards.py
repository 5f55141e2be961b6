"""A jitted function traces again when a global or closure value it read changes (guards.py),
as torch.compile does; jax.jit would keep the old value silently."""
import sys

import numpy as np

import tracejit as tj
from tracejit.config import config

SCALE = 2.0
OFFSET = np.ones(3)
FLAG = True
NAN = float("nan")


def scaled_sum(x):
    return (x * SCALE).sum()


def helper(x):
    return x + 1


def uses_helper(x):
    return helper(x) * 2


def test_a_changed_global_scalar_traces_again():
    global SCALE
    SCALE = 2.0
    f = tj.jit(scaled_sum)
    x = np.ones(3)
    assert f(x) == 6.0
    SCALE = 3.0
    assert f(x) == 9.0
    assert f.trace_count == 2
    SCALE = 2.0


def test_an_equal_value_in_a_new_object_does_not_trace_again():
    global SCALE
    f = tj.jit(scaled_sum)
    x = np.ones(3)
    f(x)
    SCALE = float("2.0")          # another float object, the same value
    f(x)
    assert f.trace_count == 1


def test_grad_called_outside_jit_sees_a_changed_global():
    global SCALE
    SCALE = 2.0
    g = tj.grad(scaled_sum)
    x = np.ones(3)
    np.testing.assert_array_equal(g(x), [2.0, 2.0, 2.0])
    SCALE = 4.0
    np.testing.assert_array_equal(g(x), [4.0, 4.0, 4.0])
    SCALE = 2.0


def test_a_redefined_helper_function_is_used():
    """A notebook cell run again redefines a helper: the next call uses the new one."""
    global helper
    original = helper
    f = tj.jit(uses_helper)
    x = np.zeros(2)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])

    def helper(x):                # noqa: F811
        return x + 10
    try:
        np.testing.assert_array_equal(f(x), [20.0, 20.0])
    finally:
        helper = original


def test_a_global_array_rebound_to_another_is_used():
    global OFFSET
    original = OFFSET
    f = tj.jit(lambda x: x + OFFSET)
    x = np.zeros(3)
    np.testing.assert_array_equal(f(x), [1, 1, 1])
    OFFSET = np.full(3, 5.0)
    try:
        np.testing.assert_array_equal(f(x), [5, 5, 5])
    finally:
        OFFSET = original


def test_a_closure_variable_rebound_traces_again():
    c = 2.0

    def inner(x):
        return x * c
    f = tj.jit(inner)
    x = np.ones(2)
    np.testing.assert_array_equal(f(x), [2, 2])
    c = 5.0
    np.testing.assert_array_equal(f(x), [5, 5])


def test_a_branch_on_a_global_flag_follows_the_flag():
    global FLAG

    def f(x):
        return x + 1 if FLAG else x - 1
    jf = tj.jit(f)
    x = np.zeros(2)
    np.testing.assert_array_equal(jf(x), [1, 1])
    FLAG = False
    try:
        np.testing.assert_array_equal(jf(x), [-1, -1])
    finally:
        FLAG = True
    np.testing.assert_array_equal(jf(x), [1, 1])


def test_a_nan_global_does_not_trace_again_on_every_call():
    f = tj.jit(lambda x: x + NAN)
    x = np.zeros(2)
    for _ in range(3):
        assert np.isnan(f(x)).all()
    assert f.trace_count == 1


def test_a_jitted_method_sees_a_changed_global():
    global SCALE

    class Model:
        @tj.jit
        def __call__(self, x):
            return x * SCALE
    m = Model()
    x = np.ones(2)
    SCALE = 2.0
    np.testing.assert_array_equal(m(x), [2, 2])
    SCALE = 7.0
    try:
        np.testing.assert_array_equal(m(x), [7, 7])
    finally:
        SCALE = 2.0


def test_the_retrace_explanation_names_the_changed_global(capsys, monkeypatch):
    global SCALE
    monkeypatch.setattr(config, "explain_retrace", True)
    f = tj.jit(scaled_sum)
    x = np.ones(3)
    SCALE = 2.0
    f(x)
    SCALE = 3.0
    try:
        f(x)
    finally:
        SCALE = 2.0
    assert "global SCALE: 2.0 -> 3.0" in capsys.readouterr().err


def test_vjp_and_jvp_see_a_changed_global():
    global SCALE
    x = np.ones(3)
    SCALE = 2.0
    _, back = tj.vjp(scaled_sum, x)
    np.testing.assert_array_equal(back(1.0)[0], [2, 2, 2])
    assert tj.jvp(scaled_sum, (x,), (x,))[1] == 6.0
    SCALE = 3.0
    try:
        _, back = tj.vjp(scaled_sum, x)
        np.testing.assert_array_equal(back(1.0)[0], [3, 3, 3])
        assert tj.jvp(scaled_sum, (x,), (x,))[1] == 9.0
    finally:
        SCALE = 2.0


params = 0


def test_an_attribute_named_like_a_global_is_not_guarded():
    """``m.params`` reads an attribute: the notebook's global ``params``, rebound every step,
    must not make each call trace again."""
    global params

    class Holder:
        params = 3.0
    h = Holder()
    f = tj.jit(lambda x: x * h.params)
    x = np.ones(2)
    for step in range(3):
        params = step
        f(x)
    assert f.trace_count == 1


class _Optimizer:
    def __init__(self, lr):
        self.lr = lr
        self.steps_taken = 0

    def update(self, p, g):
        return p - self._rate() * g

    def _rate(self):
        return self.lr


def test_an_attribute_a_method_reads_from_self_traces_again_when_set():
    """A learning-rate schedule on a global optimizer object (``opt.lr = ...``), read inside
    the method the function calls, as torch.compile's attribute guards see it."""
    opt = _Optimizer(0.1)
    step = tj.jit(lambda p, g: opt.update(p, g))
    p, g = np.ones(2), np.ones(2)
    np.testing.assert_allclose(step(p, g), [0.9, 0.9])
    opt.lr = 0.5
    np.testing.assert_allclose(step(p, g), [0.5, 0.5])
    opt.steps_taken += 1                  # not read by the trace: no new trace
    step(p, g)
    assert step.trace_count == 2


def test_attributes_of_global_and_closure_objects_are_guarded_through_chains():
    class Box:
        pass
    model = Box()
    model.w = np.ones(2)
    model.cfg = Box()
    model.cfg.scale = 2.0
    f = tj.jit(lambda x: x * model.w * model.cfg.scale)
    x = np.ones(2)
    np.testing.assert_allclose(f(x), [2.0, 2.0])
    model.w = np.full(2, 3.0)             # rebound: passed in the old one's place
    np.testing.assert_allclose(f(x), [6.0, 6.0])
    assert f.trace_count == 1
    model.cfg.scale = -1.0
    np.testing.assert_allclose(f(x), [-3.0, -3.0])
    model.cfg = Box()
    model.cfg.scale = 10.0
    np.testing.assert_allclose(f(x), [30.0, 30.0])
    assert f.trace_count == 3


class _Settings:
    factor = 2.0


def test_a_class_attribute_read_through_the_class_traces_again_when_set():
    f = tj.jit(lambda x: x * _Settings.factor)
    x = np.ones(2)
    np.testing.assert_allclose(f(x), [2.0, 2.0])
    _Settings.factor = 5.0
    try:
        np.testing.assert_allclose(f(x), [5.0, 5.0])
    finally:
        _Settings.factor = 2.0


def test_jit_of_a_bound_method_or_callable_object_guards_what_it_reads_from_self():
    class Scaler:
        def __init__(self):
            self.k = 2.0

        def apply(self, x):
            return x * self.k

        __call__ = apply

    s = Scaler()
    for f in (tj.jit(s.apply), tj.jit(s)):
        s.k = 2.0
        np.testing.assert_allclose(f(np.ones(2)), [2.0, 2.0])
        s.k = 3.0
        np.testing.assert_allclose(f(np.ones(2)), [3.0, 3.0])


race_scale = 2.0


def _another_thread_sets_scale():
    """Stands for another thread's ``race_scale = 3.0`` landing while the trace runs (a write
    the traced code does not make itself)."""
    setattr(sys.modules[__name__], "race_scale", 3.0)


def test_a_global_another_thread_changes_during_the_trace_traces_again():
    global race_scale
    race_scale = 2.0

    def f(x):
        y = x * race_scale                 # 2.0 is baked in
        if f.tracing:
            _another_thread_sets_scale()
        return y

    f.tracing = True
    jitted = tj.jit(f)
    np.testing.assert_allclose(jitted(np.ones(2)), [2.0, 2.0])
    f.tracing = False
    np.testing.assert_allclose(jitted(np.ones(2)), [3.0, 3.0])   # was 2.0, for ever


write_count = 0


def test_a_global_the_traced_code_writes_itself_does_not_trace_again_every_call():
    def f(x):
        global write_count
        write_count += 1                   # runs once per trace
        return x * 2.0

    jitted = tj.jit(f)
    for _ in range(3):
        jitted(np.ones(2))
    assert jitted.trace_count == 1


class _LrOpt:
    def __init__(self, lr):
        self.lr = lr

    def update(self, w, g):
        return w - self.lr * g


class _Trainer:
    def __init__(self):
        self.w = np.ones(3)
        self.opt = _LrOpt(0.5)
        self.state = {"m": np.zeros(3), "step": np.zeros((), np.float32)}

    @tj.jit
    def step(self, x):
        g = x * self.w
        self.w = self.opt.update(self.w, g)
        self.state = {k: v + 1 if k == "step" else v + g for k, v in self.state.items()}
        return (g * g).sum() * self.opt.lr


def test_a_jitted_method_sees_an_attribute_of_an_object_self_holds_set():
    """``self.opt.lr = ...`` (a schedule on a Trainer): ``self.opt`` is a static attribute,
    the same object, so the cache key did not change, and the old lr was used silently."""
    t, e = _Trainer(), _Trainer()
    del t.state["step"], e.state["step"]
    x = np.arange(3.0)
    for lr in (0.5, 0.25, 0.125):
        t.opt.lr = e.opt.lr = lr
        np.testing.assert_allclose(t.step(x), _Trainer.step.fn(e, x))
        np.testing.assert_allclose(t.w, e.w)


class _Scaler:
    def __init__(self):
        self.opt = _LrOpt(0.5)

    def __call__(self, x):
        return self.opt.update(x, x) * self.opt.lr


def test_jit_of_a_bound_method_sees_an_attribute_of_an_object_self_holds_set():
    s = _Scaler()
    f = tj.jit(s.__call__)
    x = np.arange(3.0)
    np.testing.assert_allclose(f(x), s(x))
    s.opt.lr = 2.0
    np.testing.assert_allclose(f(x), s(x))


def test_a_jitted_method_whose_state_holds_a_numpy_scalar_does_not_trace_again_every_step():
    """``state["step"] + 1`` is a NumPy scalar, as eagerly: beside arrays in an attribute it
    was static, so each step's new value traced again."""
    t = _Trainer()
    count = _Trainer.step.trace_count
    for _ in range(6):
        t.step(np.arange(3.0))
    assert t.state["step"] == 6
    assert _Trainer.step.trace_count - count <= 2


hparams = {"lr": 0.5, 0: 2.0}
stats = {"calls": 0}


def test_a_global_dicts_entry_set_traces_again():
    """``cfg["lr"] = ...`` between steps: the entry was baked in and the old value used
    silently (the README says rebinding ``cfg["w"]`` traces again)."""
    def step(x):
        return x * hparams["lr"] + hparams[0]

    f = tj.jit(step)
    x = np.arange(3.0)
    np.testing.assert_allclose(f(x), step(x))
    hparams["lr"] = 0.25
    np.testing.assert_allclose(f(x), step(x))
    hparams[0] = 1.0
    np.testing.assert_allclose(f(x), step(x))
    assert f.trace_count == 3
    f(x)
    assert f.trace_count == 3
    hparams.update({"lr": 0.5, 0: 2.0})

    # an entry the traced code writes itself does not trace again at every call
    def g(x):
        stats["calls"] = stats["calls"] + 1        # runs once per trace
        return x * 2.0

    jitted = tj.jit(g)
    for _ in range(3):
        jitted(np.ones(2))
    assert jitted.trace_count == 1
