"""tracejit.amp.GradScaler: PyTorch's dynamic loss scaling, eagerly and inside jit.

The reference is real PyTorch, recorded below as data (torch is not a dependency): the
inputs and torch.amp.GradScaler("cpu")'s results, printed by

    PYTHONPATH=<a venv with torch>/lib/python3.11/site-packages \\
        python benchmarks/amp_scaler_vs_torch.py --record

under the torch version in TORCH_VERSION. That script's comparison (without --record) reruns
torch beside tracejit when torch is importable. Each case feeds a sequence of scaled gradients
of w (2 values) and b (a scalar), some inf or NaN, through step() (unscale, then SGD with
lr 0.5 unless skipped) and update(); "torch" holds the scale, the growth tracker and the
parameters after each update.
"""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.amp import GradScaler
from tracejit.nn import functional as F

INF, NAN = float("inf"), float("nan")
LR = 0.5

# -- recorded by benchmarks/amp_scaler_vs_torch.py --record ---------------------------------------
TORCH_VERSION = "2.13.0+cpu"
CASES = [
    {"name": "defaults, growth_interval=3",
     "config": {"growth_interval": 3},
     "params": {"w": [1.0, -2.0], "b": 0.5},
     "grads": [
         ([1024.0, -3072.0], 512.0),
         ([2048.0, 4096.0], -1024.0),
         ([65536.0, -8192.0], 16384.0),
         ([300000.0, 1000.0], 70000.0),
         ([-100000.0, 250000.0], 300000.0),
         ([600000.0, -200000.0], 100000.0),
         ([1000000.0, 500000.0], -2000000.0),
         ([INF, 1.0], 1.0),
         ([400000.0, 100000.0], 200000.0),
         ([-300000.0, 700000.0], 100000.0),
         ([200000.0, 200000.0], -600000.0),
         ([1.0, 2.0], NAN),
         ([-INF, NAN], INF),
         ([100000.0, -100000.0], 300000.0),
         ([500000.0, 250000.0], -100000.0),
         ([200000.0, 300000.0], 400000.0),
         ([-1000000.0, 1000000.0], 500000.0),
     ],
     # torch after each update(): (scale, growth tracker, w, b)
     "torch": [
         (65536.0, 1, [0.9921875, -1.9765625], 0.49609375),
         (65536.0, 2, [0.9765625, -2.0078125], 0.50390625),
         (131072.0, 0, [0.4765625, -1.9453125], 0.37890625),
         (131072.0, 1, [-0.6678466796875, -1.949127197265625], 0.11187744140625),
         (131072.0, 2, [-0.286376953125, -2.902801513671875], -1.03253173828125),
         (262144.0, 0, [-2.5751953125, -2.139862060546875], -1.41400146484375),
         (262144.0, 1, [-4.4825439453125, -3.093536376953125], 2.40069580078125),
         (131072.0, 0, [-4.4825439453125, -3.093536376953125], 2.40069580078125),
         (131072.0, 1, [-6.0084228515625, -3.475006103515625], 1.63775634765625),
         (131072.0, 2, [-4.864013671875, -6.145294189453125], 1.25628662109375),
         (262144.0, 0, [-5.626953125, -6.908233642578125], 3.54510498046875),
         (131072.0, 0, [-5.626953125, -6.908233642578125], 3.54510498046875),
         (65536.0, 0, [-5.626953125, -6.908233642578125], 3.54510498046875),
         (65536.0, 1, [-6.389892578125, -6.145294189453125], 1.25628662109375),
         (65536.0, 2, [-10.20458984375, -8.052642822265625], 2.01922607421875),
         (131072.0, 0, [-11.73046875, -10.341461181640625], -1.03253173828125),
         (131072.0, 1, [-7.915771484375, -14.156158447265625], -2.93988037109375),
     ]},
    {"name": "growth_factor=3, backoff_factor=0.3 (rounded via float64)",
     "config": {"init_scale": 1000.0, "growth_factor": 3.0, "backoff_factor": 0.3,
                "growth_interval": 2},
     "params": {"w": [0.25, -0.75], "b": 1.5},
     "grads": [
         ([1234.5, -77.25], 10.0),
         ([300.0, 900.0], -450.0),
         ([NAN, 1.0], 2.0),
         ([1.0, 1.0], -INF),
         ([333.0, -666.0], 999.0),
         ([12.0, 24.0], 48.0),
         ([5000.0, -5000.0], 10000.0),
         ([7.0, 11.0], 13.0),
         ([INF, INF], INF),
         ([10000.0, 20000.0], 30000.0),
         ([-17.0, 19.0], 23.0),
         ([0.1, 0.2], 0.3),
     ],
     # torch after each update(): (scale, growth tracker, w, b)
     "torch": [
         (1000.0, 1, [-0.3672500252723694, -0.7113749980926514], 1.4950000047683716),
         (3000.0, 0, [-0.5172500610351562, -1.1613750457763672], 1.7200000286102295),
         (900.0, 0, [-0.5172500610351562, -1.1613750457763672], 1.7200000286102295),
         (270.0, 0, [-0.5172500610351562, -1.1613750457763672], 1.7200000286102295),
         (270.0, 1, [-1.1339167356491089, 0.07195830345153809], -0.12999999523162842),
         (810.0, 0, [-1.1561388969421387, 0.027513861656188965], -0.21888887882232666),
         (810.0, 1, [-4.242558479309082, 3.113933563232422], -6.391728401184082),
         (2430.0, 0, [-4.246879577636719, 3.1071434020996094], -6.399753093719482),
         (729.0, 0, [-4.246879577636719, 3.1071434020996094], -6.399753093719482),
         (729.0, 1, [-11.1055908203125, -10.610278129577637], -26.97588539123535),
         (2187.0, 0, [-11.093931198120117, -10.623310089111328], -26.991661071777344),
         (2187.0, 1, [-11.093954086303711, -10.623355865478516], -26.991729736328125),
     ]},
    {"name": "growth stops below float32 overflow",
     "config": {"init_scale": 2.1267647932558654e+37, "growth_factor": 3.0, "growth_interval": 1},
     "params": {"w": [1.0, 2.0], "b": 3.0},
     "grads": [
         ([1e+37, -2e+37], 3e+37),
         ([1e+38, 1e+38], -1e+38),
         ([2e+38, -2e+38], 1e+38),
         ([1e+38, 3e+38], 3e+38),
         ([1.0, INF], 1.0),
         ([1e+38, 2e+38], 3e+38),
         ([3e+38, -3e+38], 1e+38),
     ],
     # torch after each update(): (scale, growth tracker, w, b)
     "torch": [
         (6.380294379767596e+37, 0, [0.7649011611938477, 2.4701976776123047], 2.294703483581543),
         (1.914088313930279e+38, 0, [-0.018761754035949707, 1.6865347623825073], 3.078366279602051),
         (1.914088313930279e+38, 0, [-0.5412036180496216, 2.2089767456054688], 2.817145347595215),
         (1.914088313930279e+38, 0, [-0.8024245500564575, 1.425313949584961], 2.033482551574707),
         (9.570441569651394e+37, 0, [-0.8024245500564575, 1.425313949584961], 2.033482551574707),
         (2.8711324708954183e+38, 0, [-1.3248664140701294, 0.3804302215576172],
          0.46615684032440186),
         (2.8711324708954183e+38, 0, [-1.8473081588745117, 0.9028720259666443], 0.292009562253952),
     ]},
    {"name": "backoff underflows to zero",
     "config": {"init_scale": 1.1210387714598537e-44},
     "params": {"w": [1.0, -1.0], "b": 2.0},
     "grads": [
         ([INF, 0.0], 0.0),
         ([0.0, NAN], 0.0),
         ([INF, INF], 0.0),
         ([0.0, 0.0], -INF),
         ([NAN, 0.0], 0.0),
         ([1e-45, -1e-45], 0.0),
     ],
     # torch after each update(): (scale, growth tracker, w, b)
     "torch": [
         (5.605193857299268e-45, 0, [1.0, -1.0], 2.0),
         (2.802596928649634e-45, 0, [1.0, -1.0], 2.0),
         (1.401298464324817e-45, 0, [1.0, -1.0], 2.0),
         (0.0, 0, [1.0, -1.0], 2.0),
         (0.0, 0, [1.0, -1.0], 2.0),
         (0.0, 1, [-INF, INF], NAN),
     ]},
    {"name": "disabled (steps are never skipped)",
     "config": {"enabled": False},
     "params": {"w": [1.0, -1.0], "b": 2.0},
     "grads": [
         ([1.0, 2.0], 3.0),
         ([INF, 1.0], 1.0),
         ([1.0, 1.0], NAN),
     ],
     # torch after each update(): (scale, growth tracker, w, b)
     "torch": [
         (1.0, 0, [0.5, -2.0], 0.5),
         (1.0, 0, [-INF, -2.5], 0.0),
         (1.0, 0, [-INF, -3.0], NAN),
     ]},
]
UNSCALE = {"scale": 3.0,
           "grads": [1.0, 7.0, 0.001, -55000.0, 3e+38, 1e-40, 0.0, -0.0],
           "torch": {
               "float32": [0.3333333432674408, 2.3333334922790527, 0.0003333333588670939,
                           -18333.333984375, 1.0000000694406173e+38, 3.3332686570894424e-41, 0.0,
                           -0.0],
               "float64": [0.3333333432674408, 2.3333334028720856, 0.0003333333432674408,
                           -18333.333879709244, 1.0000000298023224e+38, 3.3333334326744077e-41, 0.0,
                           -0.0],
           }}



# -- running a case ---------------------------------------------------------------------------------

def _grads(gw, gb):
    return {"w": np.asarray(gw, np.float32), "b": np.asarray(gb, np.float32)}


def _functional_step(scaler, opt):
    """One training step from gradients, as pure functions: the form that goes inside jit."""
    def train_step(params, opt_state, state, grads):
        grads, found_inf = scaler.unscale(grads, state)
        params, opt_state = scaler.step(opt, grads, opt_state, params, found_inf)
        return params, opt_state, scaler.update(state, found_inf)
    return train_step


def run_case(case, mode):
    """[(scale, growth tracker, w, b)] after each update, as the "torch" rows."""
    scaler, opt = GradScaler(**case["config"]), optim.SGD(lr=LR)
    params = {k: np.asarray(v, np.float32) for k, v in case["params"].items()}
    opt_state, state, rows = opt.init(params), scaler.init(), []
    step = _functional_step(scaler, opt)
    if mode == "jit-numpy":
        step = tracejit.jit(step, backend="numpy")
    elif mode == "jit":
        step = tracejit.jit(step)
    for gw, gb in case["grads"]:
        if mode == "eager":
            scaler.scale(np.float32(1.0))
            params, opt_state = scaler.step(opt, _grads(gw, gb), opt_state, params)
            scaler.update()
            scale, tracker = scaler.get_scale(), scaler.get_growth_tracker()
        else:
            params, opt_state, state = step(params, opt_state, state, _grads(gw, gb))
            assert state["scale"].dtype == np.float32 and state["growth_tracker"].dtype == np.int32
            scale, tracker = float(state["scale"]), int(state["growth_tracker"])
        rows.append((scale, tracker, params["w"].tolist(), float(params["b"])))
    if mode.startswith("jit"):
        assert step.trace_count == 1
    return rows


def assert_rows_equal(rows, expected):
    assert len(rows) == len(expected)
    for i, (got, want) in enumerate(zip(rows, expected)):
        assert got[:2] == want[:2], f"step {i + 1}: (scale, growth tracker) {got[:2]} != {want[:2]}"
        np.testing.assert_array_equal(got[2], want[2], err_msg=f"w after step {i + 1}")
        np.testing.assert_array_equal(got[3], want[3], err_msg=f"b after step {i + 1}")


CASE_IDS = [c["name"].split(" (")[0].split(",")[0].replace(" ", "_") for c in CASES]


# -- against torch -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["eager", "functional"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_scale_sequence_equals_torchs_step_for_step_eagerly(case, mode):
    assert_rows_equal(run_case(case, mode), case["torch"])


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_scale_sequence_equals_torchs_step_for_step_inside_jit(case):
    assert_rows_equal(run_case(case, "jit-numpy"), case["torch"])


def test_scale_sequence_equals_torchs_in_a_compiled_jit_run():
    case = CASES[1]           # odd factors: the float64 rounding of the products shows
    assert_rows_equal(run_case(case, "jit"), case["torch"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unscale_rounds_the_reciprocal_as_torch(dtype):
    scaler = GradScaler(init_scale=UNSCALE["scale"])
    grads, found_inf = scaler.unscale(np.asarray(UNSCALE["grads"], dtype), scaler.init())
    assert grads.dtype == dtype and not found_inf
    np.testing.assert_array_equal(grads, UNSCALE["torch"][dtype])
    np.testing.assert_array_equal(np.signbit(grads), np.signbit(UNSCALE["torch"][dtype]))


# -- behaviour -------------------------------------------------------------------------------------

def _tree():
    return {"a": np.ones((2, 3), np.float32),
            "b": [np.full(4, 2.0, np.float64), np.full((), 3.0, np.float32)]}


@pytest.mark.parametrize("bad", [INF, -INF, NAN])
@pytest.mark.parametrize("leaf", range(3))
def test_inf_and_nan_in_any_leaf_are_detected(leaf, bad):
    scaler = GradScaler()
    state = scaler.init()
    unscale = tracejit.jit(scaler.unscale, backend="numpy")
    assert not scaler.unscale(_tree(), state)[1] and not unscale(_tree(), state)[1]
    grads = _tree()
    leaves = [grads["a"], grads["b"][0], grads["b"][1]]
    leaves[leaf][(0,) * leaves[leaf].ndim] = bad
    for fn in (scaler.unscale, unscale):
        found_inf = fn(grads, state)[1]
        assert found_inf.dtype == np.bool_ and found_inf.shape == () and bool(found_inf)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_a_skipped_step_leaves_params_and_optimizer_state_unchanged(jitted):
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32),
              "b": rng.standard_normal(4).astype(np.float32)}
    scaler, opt = GradScaler(init_scale=2.0 ** 10, growth_interval=2), optim.Adam(lr=0.1)
    step = _functional_step(scaler, opt)
    step = tracejit.jit(step, backend="numpy") if jitted else step
    opt_state, state = opt.init(params), scaler.init()
    finite = {k: rng.standard_normal(v.shape).astype(np.float32) * 1024 for k, v in params.items()}
    for _ in range(3):
        params, opt_state, state = step(params, opt_state, state, finite)
    assert float(opt_state["step"]) == 3
    bad = {k: v.copy() for k, v in finite.items()}
    bad["b"][2] = NAN
    new_params, new_opt_state, new_state = step(params, opt_state, state, bad)
    for before, after in [(params, new_params), (opt_state, new_opt_state)]:
        b_leaves, a_leaves = (tracejit.tracer.flatten(t)[0] for t in (before, after))
        for x, y in zip(b_leaves, a_leaves):
            np.testing.assert_array_equal(x, y)
    assert float(new_state["scale"]) == float(state["scale"]) / 2
    assert int(new_state["growth_tracker"]) == 0


def test_the_eager_step_skips_without_calling_the_optimizer():
    calls = []

    def sgd(grads, state, params):
        calls.append(1)
        return {k: params[k] - grads[k] for k in params}, state

    scaler = GradScaler()
    params = {"w": np.ones(3, np.float32)}
    out = scaler.step(sgd, {"w": np.array([1.0, INF, 0.0], np.float32)}, {}, params)
    assert out[0] is params and not calls
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 15


def test_the_scale_grows_after_growth_interval_finite_steps():
    scaler = GradScaler(init_scale=8.0, growth_interval=4)
    update = tracejit.jit(scaler.update, backend="numpy")
    state, scales, trackers = scaler.init(), [], []
    for found_inf in [False] * 3 + [False] + [False] * 2 + [True] + [False] * 4:
        state = update(state, np.bool_(found_inf))
        scales.append(float(state["scale"]))
        trackers.append(int(state["growth_tracker"]))
    assert scales == [8, 8, 8, 16, 16, 16, 8, 8, 8, 8, 16]
    assert trackers == [1, 2, 3, 0, 1, 2, 0, 1, 2, 3, 0]


def test_growth_interval_1_grows_on_every_finite_step():
    scaler = GradScaler(init_scale=1.0, growth_factor=4.0, growth_interval=1)
    state = scaler.init()
    for _ in range(3):
        state = scaler.update(state, False)
    assert float(state["scale"]) == 64.0 and int(state["growth_tracker"]) == 0


def test_found_inf_may_be_torchs_float_flag():
    scaler = GradScaler()
    assert float(scaler.update(scaler.init(), np.float32(1.0))["scale"]) == 2.0 ** 15
    assert int(scaler.update(scaler.init(), 0.0)["growth_tracker"]) == 1


def test_unscale_gives_grads_divided_by_the_scale():
    rng = np.random.default_rng(3)
    grads = {"w": rng.standard_normal((5, 3)).astype(np.float32),
             "b": rng.standard_normal(3)}                      # float64
    scaler = GradScaler(init_scale=2.0 ** 12)
    state = scaler.init()
    for fn in (scaler.unscale, tracejit.jit(scaler.unscale, backend="numpy")):
        out, found_inf = fn(grads, state)
        assert not found_inf
        for k in grads:
            assert out[k].dtype == grads[k].dtype
            np.testing.assert_array_equal(out[k], grads[k] / 2.0 ** 12)
    # not a power of two: within float32's rounding of 1/scale
    out, _ = GradScaler(init_scale=1000.0).unscale(grads, GradScaler(init_scale=1000.0).init())
    np.testing.assert_allclose(out["w"], grads["w"] / 1000, rtol=1e-6)
    np.testing.assert_allclose(out["b"], grads["b"] / 1000, rtol=1e-7)


def test_unscale_underscore_works_in_place_once_per_iteration():
    scaler = GradScaler(init_scale=4.0)
    grads = {"w": np.array([4.0, 8.0], np.float32), "b": np.array(2.0)}
    w = grads["w"]
    assert scaler.unscale_(grads) is grads
    assert grads["w"] is w
    np.testing.assert_array_equal(w, [1.0, 2.0])
    assert float(grads["b"]) == 0.5
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(grads)
    opt = optim.SGD(lr=1.0)
    params = {"w": np.zeros(2, np.float32), "b": np.array(0.0)}
    params, opt_state = scaler.step(opt, grads, opt.init(params), params)
    np.testing.assert_array_equal(params["w"], [-1.0, -2.0])     # not unscaled twice
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt, grads, opt_state, params)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(grads)
    scaler.update()
    assert scaler.get_growth_tracker() == 1
    with pytest.raises(RuntimeError, match="no inf checks"):
        scaler.update()
    with pytest.raises(TypeError, match="writeable NumPy arrays"):
        scaler.unscale_({"w": 1.0})


def test_scale_multiplies_every_output_and_keeps_torchs_dtype():
    scaler = GradScaler(init_scale=2.0 ** 16)
    state = scaler.init()
    assert scaler.scale(np.float32(0.5), state) == 2.0 ** 15
    assert np.asarray(scaler.scale(np.float32(0.5), state)).dtype == np.float32
    # a float16 loss scales to float32 (torch: 0-d half * 0-d float), so 2**16 fits
    half = scaler.scale(np.float16(2.0), state)
    assert np.asarray(half).dtype == np.float32 and half == 2.0 ** 17
    assert np.asarray(scaler.scale(np.float64(1.0), state)).dtype == np.float64
    out = scaler.scale((np.ones(2, np.float32), [np.float32(3.0)]), state)
    np.testing.assert_array_equal(out[0], [2.0 ** 16] * 2)
    assert out[1][0] == 3 * 2.0 ** 16


def test_the_scaled_loss_differentiates_to_scaled_gradients():
    scaler = GradScaler(init_scale=2.0 ** 8)
    w = np.array([1.0, -2.0, 3.0], np.float32)

    def loss(w):
        return (w * w).sum()

    g = tracejit.grad(lambda w, s: scaler.scale(loss(w), s))(w, scaler.init())
    np.testing.assert_array_equal(g, 2 * w * 2.0 ** 8)
    np.testing.assert_array_equal(scaler.unscale(g, scaler.init())[0], 2 * w)


def test_the_eager_form_refuses_traced_values_and_names_the_pure_call():
    scaler = GradScaler()
    with pytest.raises(TypeError, match="scale\\(outputs, state\\)"):
        tracejit.grad(lambda w: scaler.scale((w * w).sum()))(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="unscale\\(grads, state\\)"):
        tracejit.jit(scaler.unscale_, backend="numpy")({"w": np.ones(2, np.float32)})


def test_float16_gradients_are_refused_as_torch_does():
    scaler = GradScaler()
    with pytest.raises(ValueError, match="float16 gradients"):
        scaler.unscale({"w": np.ones(2, np.float16)}, scaler.init())


def test_a_disabled_scaler_scales_nothing_and_never_skips():
    scaler = GradScaler(enabled=False)
    state = scaler.init()
    loss = np.float32(3.0)
    assert scaler.scale(loss, state) is loss and scaler.scale(loss) is loss
    grads = {"w": np.array([INF], np.float32)}
    assert scaler.unscale(grads, state)[0] is grads and not scaler.unscale(grads, state)[1]
    assert scaler.update(state, True) is state
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_state_dict_has_torchs_keys_and_round_trips():
    scaler = GradScaler(init_scale=1024.0, growth_interval=3)
    scaler.step(lambda g, s, p: (p, s), {"w": np.ones(1, np.float32)}, {}, {})
    scaler.update()
    sd = scaler.state_dict()
    assert sd == {"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 3, "_growth_tracker": 1}
    other = GradScaler()
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    assert other.state["growth_tracker"].dtype == np.int32
    with pytest.raises(RuntimeError, match="empty"):
        GradScaler().load_state_dict({})
    scaler.update(new_scale=8.0)                       # torch's update(new_scale)
    assert scaler.get_scale() == 8.0 and scaler.get_growth_tracker() == 1
    scaler.update(16.0)
    assert scaler.get_scale() == 16.0


@pytest.mark.parametrize("kwargs, message", [
    ({"growth_factor": 1.0}, "growth_factor must be > 1"),
    ({"growth_factor": 0.5}, "growth_factor must be > 1"),
    ({"backoff_factor": 1.0}, "backoff_factor must be in \\(0, 1\\)"),
    ({"backoff_factor": 0.0}, "backoff_factor must be in \\(0, 1\\)"),
    ({"backoff_factor": -0.5}, "backoff_factor must be in \\(0, 1\\)"),
    ({"growth_interval": 0}, "growth_interval must be an int >= 1"),
    ({"growth_interval": 2.5}, "growth_interval must be an int >= 1"),
    ({"init_scale": 0.0}, "init_scale must be a finite number > 0"),
    ({"init_scale": INF}, "init_scale must be a finite number > 0"),
])
def test_an_invalid_config_gives_a_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GradScaler(**kwargs)


def test_the_defaults_are_torchs():
    scaler = GradScaler()
    assert (scaler.init_scale, scaler.growth_factor, scaler.backoff_factor,
            scaler.growth_interval, scaler.enabled) == (65536.0, 2.0, 0.5, 2000, True)
    assert tracejit.amp.GradScaler is GradScaler


# -- a training step -------------------------------------------------------------------------------

class TinyMLP(nn.Module):
    def __init__(self, rng):
        self.fc1 = nn.Linear(6, 8, rng=rng)
        self.fc2 = nn.Linear(8, 3, rng=rng)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@pytest.mark.slow
def test_a_jitted_training_step_with_the_scaler_trains_a_float32_model():
    rng = np.random.default_rng(0)
    model = TinyMLP(rng)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    # A scale so large that the first scaled gradients overflow float32: those steps are
    # skipped and the scale backs off until they fit, all inside the one compiled step.
    scaler, opt = GradScaler(init_scale=2.0 ** 127, growth_interval=5), optim.Adam(lr=0.05)

    @tracejit.jit
    def train_step(model, opt_state, scaler_state, x, y):
        def scaled_loss(m):
            loss = F.cross_entropy(m(x), y) * len(x)         # summed over the batch
            return scaler.scale(loss, scaler_state), loss
        grads, loss = tracejit.grad(scaled_loss, has_aux=True)(model)
        grads, found_inf = scaler.unscale(grads, scaler_state)
        model, opt_state = scaler.step(opt, grads, opt_state, model, found_inf)
        return model, opt_state, scaler.update(scaler_state, found_inf), loss, found_inf

    opt_state, state, losses, skipped = opt.init(model), scaler.init(), [], []
    for _ in range(30):
        model, opt_state, state, loss, found_inf = train_step(model, opt_state, state, x, y)
        losses.append(float(loss))
        skipped.append(bool(found_inf))
    assert train_step.trace_count == 1
    assert type(model) is TinyMLP and model.fc1.weight.dtype == np.float32
    assert skipped[0] and not all(skipped)
    assert float(opt_state["step"]) == skipped.count(False)      # skipped steps left it alone
    assert float(state["scale"]) < 2.0 ** 127
    assert losses[-1] < 0.5 * losses[0]


def test_the_pytorch_style_eager_loop_trains_and_reads_the_current_scale():
    rng = np.random.default_rng(1)
    model = TinyMLP(rng)
    x = rng.standard_normal((16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    scaler, opt = GradScaler(init_scale=2.0 ** 127, growth_interval=5), optim.Adam(lr=0.05)
    opt_state = opt.init(model)
    # the scale is an argument of the differentiated function, never a constant of its trace
    grad_fn = tracejit.grad(lambda m, s: scaler.scale(F.cross_entropy(m(x), y) * len(x), s))
    first = float(F.cross_entropy(model(x), y))
    scales = []
    for _ in range(20):
        grads = grad_fn(model, scaler.state)
        model, opt_state = scaler.step(opt, grads, opt_state, model)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales[0] == 2.0 ** 126 and len(set(scales)) > 2
    assert float(opt_state["step"]) < 20                       # some steps were skipped
    assert float(F.cross_entropy(model(x), y)) < 0.5 * first
