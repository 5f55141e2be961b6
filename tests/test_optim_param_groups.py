"""ParamGroups, torch's parameter groups for pytrees: each leaf labelled by its path, each
label's leaves updated by an optimizer of its own, the groups' rates read per call."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit
from tracejit import nn, optim
from tracejit.tracer.pytree import flatten, unflatten

R = np.random.default_rng(2)
MODEL = nn.Sequential(nn.Linear(3, 4, rng=R), nn.ReLU(), nn.Linear(4, 2, rng=R))
GRADS = [{k: R.standard_normal(v.shape).astype(np.float32)
          for k, v in MODEL.named_parameters()} for _ in range(5)]


def _bias_or_weight(path, p):
    return "no_decay" if p.ndim == 1 else "decay"


def _groups():
    return optim.ParamGroups({"decay": optim.AdamW(lr=0.1, weight_decay=0.5),
                              "no_decay": optim.SGD(lr=0.2, momentum=0.9)}, _bias_or_weight)


def _as_model(grads):
    """A gradient pytree of the model's structure (what tracejit.grad gives)."""
    _, tree = flatten(MODEL)
    return unflatten(tree, [grads[k] for k, _ in MODEL.named_parameters()])


def _separately(groups_lrs):
    """Each group's optimizer run by hand on its own leaves, with per-step rates."""
    params = dict(MODEL.named_parameters())
    names = {"decay": [k for k in params if params[k].ndim == 2],
             "no_decay": [k for k in params if params[k].ndim == 1]}
    makers = {"decay": lambda lr: optim.AdamW(lr=lr, weight_decay=0.5),
              "no_decay": lambda lr: optim.SGD(lr=lr, momentum=0.9)}
    for label, keys in names.items():
        sub = [params[k] for k in keys]
        state = makers[label](1.0).init(sub)
        for g, lrs in zip(GRADS, groups_lrs):
            sub, state = makers[label](lrs[label]).update([g[k] for k in keys], state, sub)
        params.update(zip(keys, sub))
    return params


def test_each_group_follows_its_own_optimizer_eagerly_and_in_one_jitted_step():
    opt = _groups()
    step = tracejit.jit(opt.update, backend="interpreter")
    m1 = m2 = MODEL
    s1, s2 = opt.init(MODEL), opt.init(MODEL)
    for g in GRADS:
        m1, s1 = opt.update(_as_model(g), s1, m1)
        m2, s2 = step(_as_model(g), s2, m2)
    assert step.trace_count == 1 and type(m2) is nn.Sequential
    want = _separately([{"decay": 0.1, "no_decay": 0.2}] * len(GRADS))
    for k, p in m2.named_parameters():
        np.testing.assert_allclose(p, want[k], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(dict(m1.named_parameters())[k], want[k], rtol=1e-5,
                                   atol=1e-6)


def test_a_scheduler_scales_each_groups_own_rate_without_tracing_again():
    opt = _groups()
    sched = optim.ExponentialLR(opt, gamma=0.5)
    assert sched.base_lrs == [0.1, 0.2]
    step = tracejit.jit(lambda g, s, p: opt.update(g, s, p), backend="interpreter")
    model, state, lrs = MODEL, opt.init(MODEL), []
    for g in GRADS:
        lrs.append(dict(zip(["decay", "no_decay"], sched.get_last_lr())))
        model, state = step(_as_model(g), state, model)
        sched.step()
    assert step.trace_count == 1
    assert lrs[2] == {"decay": 0.025, "no_decay": 0.05}
    want = _separately(lrs)
    for k, p in model.named_parameters():
        np.testing.assert_allclose(p, want[k], rtol=1e-5, atol=1e-6)


def test_a_group_rate_set_by_hand_is_read_at_the_next_call():
    opt = _groups()
    step = tracejit.jit(opt.update, backend="interpreter")
    state = opt.init(MODEL)
    opt.lr[1] = 0.0                       # torch's param_groups[1]["lr"] = 0
    out, _ = step(_as_model(GRADS[0]), state, MODEL)
    for k, p in out.named_parameters():
        if p.ndim == 1:
            np.testing.assert_array_equal(p, dict(MODEL.named_parameters())[k])
    opt.lr[1] = 0.2
    out, _ = step(_as_model(GRADS[0]), state, MODEL)
    assert step.trace_count == 1
    assert not np.array_equal(out[0].bias, MODEL[0].bias)


def test_a_leaf_labelled_none_is_left_unchanged_and_has_no_state():
    opt = optim.ParamGroups({"train": optim.Adam(lr=0.1)},
                            lambda path, p: "train" if path.startswith(".2.") else None)
    state = opt.init(MODEL)
    assert len(state["train"]["exp_avg"]) == 2
    out, _ = opt.update(_as_model(GRADS[0]), state, MODEL)
    np.testing.assert_array_equal(out[0].weight, MODEL[0].weight)
    assert not np.array_equal(out[2].weight, MODEL[2].weight)


def test_a_label_naming_no_group_and_bad_arguments_are_refused():
    opt = optim.ParamGroups({"a": optim.SGD(lr=0.1)}, lambda path, p: "b")
    with pytest.raises(ValueError, match="'.0.weight' is labelled 'b', which names no group"):
        opt.init(MODEL)
    with pytest.raises(TypeError, match="dict of optimizers"):
        optim.ParamGroups([optim.SGD(lr=0.1)], _bias_or_weight)
    with pytest.raises(TypeError, match="label must be a function"):
        optim.ParamGroups({"a": optim.SGD(lr=0.1)}, "a")
