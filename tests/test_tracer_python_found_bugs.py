"""Python-level features under jit compared with running the function eagerly: bugs found by
probing pytrees, signatures, Python operators on traced arrays and the jit driver."""
from __future__ import annotations

import collections
import copy
import functools

import numpy as np
import pytest

import tracejit as tj

_SCALE = 1.0


def _scaled(a, b):
    return a * b * _SCALE


class _Scaler:
    def __call__(self, a):
        return a * _SCALE


def test_copy_copy_of_a_view_is_a_new_array_as_in_numpy():
    """copy.copy copied the tracer's slots: the copy of a view still shared the viewed
    array's memory, so writes went through one to the other (both ways)."""
    def write_into_copy(a):
        c = copy.copy(a[1:])
        c[0] = 50.0
        return a.sum(), c

    def write_into_original(a):
        c = copy.copy(a[1:])
        a[2] = 77.0
        return c

    for fn in (write_into_copy, write_into_original):
        x_eager, x_jit = np.arange(4.0), np.arange(4.0)
        want, got = fn(x_eager), tj.jit(fn)(x_jit)
        if isinstance(want, tuple):
            for w, g in zip(want, got):
                np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(x_jit, x_eager)


def test_copy_deepcopy_of_traced_arrays_and_containers_of_them():
    """copy.deepcopy of a tracer deep-copied its trace and failed with "entry() missing 1
    required positional argument"."""
    def fn(a):
        d = copy.deepcopy({"k": a, "n": 2})
        d["k"][0] = 100.0
        return a * d["n"], d["k"]

    x = np.arange(3.0)
    want, got = fn(x.copy()), tj.jit(fn)(x.copy())
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_returning_a_generator_is_an_error_naming_the_result():
    """A generator (map, zip, a dataclass) returned: the error was "an operand of type
    generator is not supported", naming the caller's line and no result."""
    with pytest.raises(TypeError, match=r"generator as a result of .*result\[1\]"
                                        r"(.|\n)*tuple\(\.\.\.\)"):
        tj.jit(lambda a: (a, (a * i for i in range(3))))(np.ones(3))
    with pytest.raises(TypeError, match=r"map as a result of"):
        tj.jit(lambda a: map(np.exp, [a]))(np.ones(3))


def test_a_global_read_through_functools_partial_traces_again_when_it_changes():
    """jit(functools.partial(f, ...)) did not guard f's globals: a changed global scalar kept
    its traced value."""
    global _SCALE
    f = tj.jit(functools.partial(_scaled, 2.0))
    x = np.arange(3.0)
    try:
        _SCALE = 1.0
        np.testing.assert_array_equal(f(x), x * 2.0)
        _SCALE = 10.0
        np.testing.assert_array_equal(f(x), x * 20.0)
    finally:
        _SCALE = 1.0


def test_a_global_read_by_a_callable_instance_traces_again_when_it_changes():
    """jit(obj) of an object with __call__: its class's __call__ was not followed, so the
    globals it read were not guarded."""
    global _SCALE
    f = tj.jit(_Scaler())
    x = np.arange(3.0)
    try:
        _SCALE = 1.0
        np.testing.assert_array_equal(f(x), x)
        _SCALE = 3.0
        np.testing.assert_array_equal(f(x), x * 3.0)
    finally:
        _SCALE = 1.0


def test_registered_node_with_unhashable_aux_is_an_error_naming_the_class():
    """A registered pytree node whose flatten returned a list as aux: a bare "unhashable type:
    'list'" from the cache lookup."""
    class Holder:
        def __init__(self, a, meta):
            self.a, self.meta = a, meta

    tj.register_pytree_node(Holder, lambda h: ((h.a,), h.meta),
                            lambda aux, ch: Holder(ch[0], aux))
    f = tj.jit(lambda h: h.a * len(h.meta))
    with pytest.raises(TypeError, match=r"Holder(.|\n)*\[1, 2\](.|\n)*hashable"):
        f(Holder(np.ones(3), [1, 2]))
    np.testing.assert_array_equal(f(Holder(np.ones(3), (1, 2))), np.full(3, 2.0))


def test_a_dict_subclass_argument_says_to_pass_a_plain_dict():
    """An OrderedDict or defaultdict argument: "pass ... dicts of them", which it is."""
    for d in (collections.OrderedDict(a=np.ones(2)),
              collections.defaultdict(list, a=np.ones(2))):
        with pytest.raises(TypeError, match=r"dict subclass(.|\n)*pass dict\(d\)"):
            tj.jit(lambda d: d["a"] * 2)(d)
    np.testing.assert_array_equal(tj.jit(lambda d: d["a"] * 2)(dict(d)), np.full(2, 2.0))


def test_in_operator_on_a_traced_array_is_an_error_naming_it():
    """``v in x`` iterated the tracer and bool()ed the comparison: an error about if/while."""
    with pytest.raises(TypeError, match=r"`value in x`(.|\n)*\(x == value\)\.any\(\)"):
        tj.jit(lambda a: 2.0 in a)(np.arange(3.0))


def test_a_jitted_method_of_a_class_with_slots_reads_them_as_arguments():
    """A slotted class: ``self`` was refused ("argument self has type ..., not an array"); a
    class with a __dict__ deriving from a slotted one lost the slots in the trace's copy of
    ``self`` (AttributeError). Its arrays are arguments (updates seen), the rest static."""
    class Slotted:
        __slots__ = ("w", "__p", "n")

        def __init__(self):
            self.w, self.__p, self.n = np.ones(3), 2.0, 3

        @tj.jit
        def m(self, a):
            return a * self.w * self.__p * self.n

    class Derived(Slotted):
        def __init__(self):
            super().__init__()
            self.k = 10.0

        @tj.jit
        def md(self, a):
            return a * self.w * self.k

    x = np.arange(3.0)
    s = Slotted()
    np.testing.assert_array_equal(s.m(x), x * 6.0)
    s.w, s.n = np.full(3, 2.0), 4
    np.testing.assert_array_equal(s.m(x), x * 16.0)
    d = Derived()
    np.testing.assert_array_equal(d.md(x), x * 10.0)
    d.w = np.full(3, 3.0)
    np.testing.assert_array_equal(d.md(x), x * 30.0)


def test_dtype_introspection_of_a_traced_array_answers_as_numpy():
    """np.isrealobj, np.iscomplexobj and np.can_cast (asked by helper libraries about their
    input) were refused as unsupported NumPy functions."""
    seen = {}

    def fn(a):
        seen.update(real=np.isrealobj(a), complex=np.iscomplexobj(a),
                    to32=np.can_cast(a, np.float32), to64=np.can_cast(a, np.float64),
                    unsafe=np.can_cast(a, np.int8, casting="unsafe"))
        return a * 2

    x = np.arange(3.0)
    tj.jit(fn)(x)
    traced = dict(seen)
    fn(x)
    assert traced == seen == {"real": True, "complex": False, "to32": False, "to64": True,
                              "unsafe": True}


def test_a_traced_value_kept_in_a_global_list_and_used_later_is_an_escaped_tracer_error():
    """``history.append(loss)`` in a jitted step keeps a tracer (Python runs at trace time, as
    in JAX); using it afterwards said "float() of a traced value", not what happened."""
    from tracejit import EscapedTracerError
    history = []

    @tj.jit
    def step(x):
        loss = (x * x).sum()
        history.append(loss)
        return loss

    step(np.ones(3))
    for use in (lambda: float(history[0]), lambda: np.asarray(history),
                lambda: bool(history[0]), lambda: history[0].item(),
                lambda: f"{history[0]:.3f}"):
        with pytest.raises(EscapedTracerError, match="return the value"):
            use()
