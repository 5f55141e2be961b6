"""What a jitted function does to the dicts and lists among its arguments reaches the caller, as
eagerly: new, deleted and re-stored keys, list items appended, inserted and removed, nested
containers replaced, at any depth; on the traced call and on every later call, which replays
it (tracer/container_writes.py)."""
import numpy as np
import pytest

import tracejit
from tracejit import UnsupportedError, nn


def numpy_tier(fn, **kwargs):
    return tracejit.jit(fn, backend="numpy", **kwargs)


def assert_same(got, want, path="", rtol=0.0):
    """``got`` (jit's) holds what ``want`` (eager's) holds: the same kinds of containers with
    keys in the same order, arrays of one dtype and shape, scalars of one type."""
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), path
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]", rtol)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]", rtol)
    elif isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want), path
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=path)
    else:
        assert got == want, path


def check_calls(fn, make, calls=3, jitted=None, rtol=0.0):
    """Call the jitted ``fn`` and ``fn`` itself on fresh arguments ``make(i)`` ``calls``
    times; the arguments and results must agree after each call."""
    jitted = jitted or numpy_tier(fn)
    for i in range(calls):
        got_args, want_args = make(i), make(i)
        got, want = jitted(*got_args), fn(*want_args)
        assert_same(got_args, want_args, f"call {i}: args", rtol)
        assert_same(got, want, f"call {i}: result", rtol)
    return jitted


def test_a_new_key_reaches_the_callers_dict():
    def f(d):
        d["new"] = d["x"] * 2
        return d["x"].sum()
    jf = check_calls(f, lambda i: ({"x": np.arange(3.0) + i},))
    assert jf.trace_count == 1


def test_a_deleted_key_is_deleted_from_the_callers_dict():
    def f(d):
        y = d.pop("y")
        del d["z"]
        return d["x"] + y.sum()
    jf = check_calls(f, lambda i: ({"x": np.ones(2) * i, "y": np.arange(3.0), "z": 1.5},))
    assert jf.trace_count == 1


def test_new_and_deleted_keys_together_as_in_the_issue():
    def f(d):
        d["new"] = d["x"] * 2
        d.pop("y")
        return d["x"].sum()
    d = {"x": np.ones(3), "y": np.zeros(2)}
    numpy_tier(f)(d)
    assert sorted(d) == ["new", "x"]
    np.testing.assert_array_equal(d["new"], [2.0, 2.0, 2.0])
    check_calls(f, lambda i: ({"x": np.ones(3) + i, "y": np.zeros(2)},))


def test_keys_keep_the_callers_order_and_keys_stored_again_go_last():
    def f(d):
        d.pop("b")
        d["a"] = d.pop("a") * 2     # removed and stored again: last, as eagerly
        d["new"] = 1.0
        d["c"] = d["c"] + 1         # stored in place: keeps its place
        return d["d"]
    # not in sorted order, as the trace's copy is
    check_calls(f, lambda i: ({"c": np.ones(1) * i, "b": np.ones(2), "a": np.ones(3),
                               "d": np.zeros(1)},))


def test_a_nested_dict_in_a_list_in_a_dict():
    def f(state):
        layers = state["layers"]
        layers[1]["cache"] = layers[1]["w"] * 2          # a new key two levels down
        del layers[0]["tmp"]
        layers.append({"w": layers[0]["w"] + 1, "name": "extra"})
        state["step"] = state["step"] + 1
        return layers[1]["w"].sum()

    def make(i):
        return ({"layers": [{"w": np.ones(2) * i, "tmp": np.zeros(1)}, {"w": np.arange(3.0)}],
                 "step": i},)
    jf = check_calls(f, make)
    assert jf.trace_count == 1


LIST_CHANGES = {
    "append": lambda l: l.append(l[0] + 1),
    "pop": lambda l: l.pop(),
    "pop(0)": lambda l: l.pop(0),
    "insert": lambda l: l.insert(1, l[0] * 3),
    "extend": lambda l: l.extend([l[0] - 1, 2.5, "label"]),
    "clear": lambda l: l.clear(),
    "del l[0]": lambda l: l.__delitem__(0),
    "reverse": lambda l: l.reverse(),
    "slice store": lambda l: l.__setitem__(slice(1, None), [l[0] * 2]),
}


@pytest.mark.parametrize("change", sorted(LIST_CHANGES))
def test_list_changes_reach_the_callers_list(change):
    def f(l):
        total = l[0].sum()
        LIST_CHANGES[change](l)
        return total
    jf = check_calls(f, lambda i: ([np.arange(2.0) + i, np.ones(3), np.zeros(1)],))
    assert jf.trace_count == 1


def test_the_callers_list_stays_the_same_object():
    def f(l):
        l.append(l[0] * 2)
        return l[0]
    l = [np.ones(2)]
    inner = l
    numpy_tier(f)(l)
    assert inner is l and len(l) == 2


def test_a_replaced_nested_container_holds_the_callers_own_objects_where_eager_would():
    def f(d):
        d["pair"] = (d["x"], [d["x"] * 2, "tag", None, 1.5])
        d["moved"] = d.pop("items")               # the caller's list itself, moved
        return d["x"].sum()
    jf = numpy_tier(f)
    for _ in range(2):
        x, items = np.ones(3), [np.zeros(2)]
        d = {"x": x, "items": items}
        jf(d)
        assert d["pair"][0] is x and d["moved"] is items and d["moved"][0] is items[0]
        assert_same(d["pair"], (x, [x * 2, "tag", None, 1.5]))
    assert jf.trace_count == 1


def test_containers_in_tuples_and_keyword_arguments():
    def f(t, *, opts):
        t[0].append(t[1] + 1)
        opts["seen"] = "yes"
        return t[1]
    jf = numpy_tier(f)
    for i in range(2):
        t, opts = ([np.zeros(2)], np.ones(2) * i), {"mode": "train"}
        jf(t, opts=opts)
        assert len(t[0]) == 2 and opts == {"mode": "train", "seen": "yes"}
        np.testing.assert_array_equal(t[0][1], np.ones(2) * i + 1)


def test_python_numbers_stay_python_numbers_and_numpy_scalars_numpy_scalars():
    def f(d):
        d["count"] = d["count"] + 1          # from a Python int: a Python int
        d["lr"] = d["lr"] * 0.5              # from a Python float: a Python float
        d["flag"] = True                     # known when tracing: itself
        d["total"] = d["x"].sum()            # NumPy's result: a NumPy scalar
        return d["x"]
    jf = check_calls(f, lambda i: ({"x": np.arange(3.0) + i, "count": i, "lr": 0.1 * i},))
    assert jf.trace_count == 1


def test_python_numbers_stored_in_place_stay_python_numbers():
    def f(d):
        d["count"] = d["count"] + 1
        d["lr"] = d["lr"] * 0.5
        return d["x"]
    check_calls(f, lambda i: ({"x": np.ones(2), "count": i, "lr": 1.0 + i},))


def test_the_same_list_called_again_retraces_for_its_new_length_and_matches_eager():
    def f(l):
        l.append(l[-1] * 2)
        return l[0].sum()
    jf = numpy_tier(f)
    got, want = [np.ones(2)], [np.ones(2)]
    for _ in range(3):
        jf(got)
        f(want)
        assert_same(got, want)
    assert jf.trace_count == 3      # each call's list is a new signature


def test_the_same_dict_called_again_retraces_once_then_replays():
    def f(d):
        d["n"] = d.get("n", 0) + 1
        d["scaled"] = d["x"] * d["n"]
        return d["x"].sum()
    jf = numpy_tier(f)
    got, want = {"x": np.arange(3.0)}, {"x": np.arange(3.0)}
    for _ in range(3):
        jf(got)
        f(want)
        assert_same(got, want)
    assert jf.trace_count == 2      # {x} then {n, scaled, x}, replayed by the third call


def test_stored_arrays_are_fresh_each_call():
    def f(d):
        y = d["x"] * 2
        d["y"] = y
        d["both"] = [y, y]                   # one object twice: one array, as eagerly
        d["const"] = np.arange(3.0)
        return y.sum()
    jf = numpy_tier(f)
    first = {"x": np.ones(3)}
    jf(first)
    assert first["both"][0] is first["y"] and first["both"][1] is first["y"]
    assert not np.shares_memory(first["x"], first["y"])
    first["y"][:] = -1
    first["const"][:] = -1
    second = {"x": np.ones(3)}
    jf(second)
    np.testing.assert_array_equal(second["y"], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(second["const"], [0.0, 1.0, 2.0])
    for a in (first["y"], first["const"]):
        for b in (second["y"], second["const"]):
            assert not np.shares_memory(a, b)
    assert jf.trace_count == 1


def test_grad_of_a_function_adding_a_key_to_its_argument_is_refused():
    def loss(p):
        p["scaled"] = p["w"] * 2
        return p["scaled"].sum()
    with pytest.raises(UnsupportedError, match=r"adds, removes or reorders entries of its "
                                               r"argument p \("):
        tracejit.grad(loss)({"w": np.ones(3)})


def test_storing_an_equal_string_again_changes_nothing_even_under_grad():
    def loss(p):
        p["act"] = "".join(["ta", "nh"])        # a new str object, equal to the old one
        return np.tanh(p["w"]).sum()
    p = {"act": "tanh", "w": np.zeros(2)}
    np.testing.assert_allclose(tracejit.grad(loss)(p)["w"], [1.0, 1.0])


def test_vjp_of_a_function_appending_to_its_argument_list_is_refused():
    def f(xs):
        xs.append(xs[0] * 2)
        return xs[0] * 3
    with pytest.raises(UnsupportedError, match="entries of its argument xs"):
        tracejit.vjp(f, [np.ones(3)])


class _Linear(nn.Module):
    def __init__(self):
        self.w = np.ones(2)


def test_changing_a_modules_attributes_is_an_error_naming_the_line():
    def f(m, x):
        m.w = m.w * x
        return m.w.sum()
    with pytest.raises(UnsupportedError, match=r"attributes of the argument m, a _Linear(.|\n)*"
                                               r"made at .*test_container_writeback.py"):
        numpy_tier(f)(_Linear(), np.ones(2))


def test_storing_an_object_jit_cannot_hand_back_is_an_error():
    def f(d):
        d["seen"] = {1, 2}
        return d["x"]
    with pytest.raises(UnsupportedError, match=r"storing a set into the argument d\['seen'\]"):
        numpy_tier(f)({"x": np.ones(2)})


def test_changing_one_container_passed_twice_is_refused():
    def f(a, b):
        a.append(a[0] + 1)
        b.append(b[0] + 2)
        return a[0]
    shared = [np.ones(2)]
    with pytest.raises(ValueError, match="one object in the caller"):
        numpy_tier(f)(shared, shared)


class _Recorder:
    def __init__(self):
        self.w = np.ones(2)
        self.seen = [np.zeros(2)]

    def step(self, x):
        self.seen.append(x * self.w)
        return self.seen[-1].sum()

    jitted_step = tracejit.jit(step, backend="numpy")

    def grow(self, x):
        self.extra = x * 2
        return x

    jitted_grow = tracejit.jit(grow, backend="numpy")


def test_a_jitted_method_appending_to_a_list_attribute_updates_the_object():
    eager, jitted = _Recorder(), _Recorder()
    for i in range(3):
        x = np.arange(2.0) + i
        assert jitted.jitted_step(x) == eager.step(x)
    assert_same(jitted.seen, eager.seen)


def test_a_jitted_method_adding_an_attribute_is_an_error():
    with pytest.raises(UnsupportedError, match="adding attributes to self"):
        _Recorder().jitted_grow(np.ones(2))


def _step(state):
    x = state.pop("x")
    state["y"] = np.tanh(x) * 3.0 + 1.0
    state["parts"] = [x.sum(), state["y"][:2] * 1, "done"]
    return x.max()


def test_the_compiled_backend_tiered_and_untiered_writes_back_the_same():
    tiered = tracejit.jit(_step, tiered=True)

    def make(i):
        return ({"x": np.linspace(-1.0, 1.0, 5) + i, "keep": np.ones(1)},)
    for i in range(2):
        check_calls(_step, lambda _: make(i), calls=1, jitted=tiered, rtol=1e-13)
        tiered.wait_compiled()     # the first call may run on the NumPy tier, the second not
    (stats,) = tiered.stats()
    assert stats["tier"] == "compiled" and tiered.trace_count == 1
    check_calls(_step, make, calls=2, jitted=tracejit.jit(_step, tiered=False), rtol=1e-13)
