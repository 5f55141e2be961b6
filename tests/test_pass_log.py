"""Visible passes: ``TRACEJIT_DUMP=passes`` prints a line per pass run, and
``jit(f).lower(*args).passes`` gives the same records as data, counting the ops the IR has."""
import numpy as np
import pytest

import tracejit
from tracejit.config import config
from tracejit.driver import fusion_of, optimized_of
from tracejit.ir import Builder, TensorType, dtypes, ops
from tracejit.ir.passes import PassLog, PassRecord, optimize

x3 = np.array([1.0, -0.0, np.nan], np.float32)


def f(x):
    y = -(-(x * 1.0))                     # mul-one, double-neg: simplify removes them
    z = np.exp(y) + np.exp(y)             # CSE merges the second exp
    return z.reshape(3, 1) * 2.0 + 0.5


def scanned(x):
    def body(c, xi):
        return c + xi * 1.0, c * 2
    return tracejit.lax.scan(body, x[0], x)


def test_dump_passes_prints_one_line_per_pass_as_lower_records_them(monkeypatch, capsys):
    monkeypatch.setattr(config, "dump", frozenset({"passes"}))
    got = tracejit.jit(f, backend="numpy")(x3)
    np.testing.assert_array_equal(got, f(x3))
    printed = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("pass ")]
    monkeypatch.setattr(config, "dump", frozenset())
    records = tracejit.jit(f, backend="numpy").lower(x3).passes
    # the NumPy tier runs the optimizer's passes; lower() also reports fuse and the arena
    assert printed == [f"pass {r.summary()}" for r in records if r.name not in ("fuse", "arena")]
    assert [r.name for r in records][:5] == ["inline", "simplify", "fold", "cse", "dce"]
    assert [r.name for r in records][-2:] == ["fuse", "arena"]


def test_dump_passes_ir_prints_the_ir_after_each_pass_that_changed_it(monkeypatch, capsys):
    monkeypatch.setattr(config, "dump", frozenset({"passes+ir"}))
    tracejit.jit(f, backend="numpy")(x3)
    err = capsys.readouterr().err
    monkeypatch.setattr(config, "dump", frozenset())
    changed = [r for r in tracejit.jit(f, backend="numpy").lower(x3).passes
               if r.changed and r.name not in ("fuse", "arena")]
    assert err.count("func @f(") == len(changed) > 0
    assert "simplify" in [r.name for r in changed]


def test_nothing_is_printed_or_recorded_unless_asked(monkeypatch, capsys):
    monkeypatch.setattr(config, "dump", frozenset())
    tracejit.jit(f, backend="numpy")(x3)
    assert "pass " not in capsys.readouterr().err
    fn = tracejit.make_ir(f)(x3)
    assert str(optimize(fn)) == str(optimize(fn, log=PassLog()))


def test_records_count_the_ops_of_the_ir_before_and_after_each_pass():
    lowered = tracejit.jit(f, backend="numpy").lower(x3)
    records = lowered.passes
    assert all(isinstance(r, PassRecord) for r in records)
    assert records[0].ops_before == len(lowered.function.ops)
    for prev, r in zip(records, records[1:]):      # one Function, passes chained
        assert r.ops_before == prev.ops_after
    optimized = optimized_of(lowered.function)
    last_dce = [r for r in records if r.name == "dce"][-1]
    assert last_dce.ops_after == len(optimized.ops) and str(last_dce.after) == str(optimized)
    fuse = next(r for r in records if r.name == "fuse")
    fusion = fusion_of(lowered.function)
    op_lines = [ln for ln in lowered.optimized.splitlines() if ln.lstrip().startswith("%")]
    assert fuse.ops_after == len(fusion.function.ops) == len(op_lines)
    assert fuse.details["groups"] == len(fusion.groups) == sum(fuse.details["kinds"].values())


def test_records_say_what_each_pass_did():
    records = tracejit.jit(f, backend="numpy").lower(x3).passes
    first = {r.name: r for r in records if r.round == 1}
    assert first["simplify"].details["patterns"] == {"mul-one": 1, "double-neg": 1}
    assert first["cse"].details["merged"] == first["cse"].removed >= 1     # the second exp
    assert first["dce"].details["removed"] == first["dce"].removed > 0
    assert "mul-one 1" in first["simplify"].summary()
    assert not any(r.changed for r in records if r.round == max(q.round or 0 for q in records))
    arena = records[-1]
    assert arena.name == "arena" and arena.details["peak_bytes"] > 0
    assert arena.details["arena_bytes"] <= arena.details["unpacked_bytes"]


def test_regions_get_records_of_their_own_named_by_op_and_region():
    records = tracejit.jit(scanned, backend="numpy").lower(x3.reshape(3, 1)).passes
    body = [r for r in records if r.function != "@scanned"]
    assert body and all(r.function.startswith("@scanned/") and r.function.endswith(
        ":scan_body") for r in body)
    assert any(r.details.get("patterns", {}).get("mul-one") for r in body)
    # a region's passes run inside the round of the Function holding it
    names = [(r.function == "@scanned", r.name) for r in records]
    assert names.index((False, "simplify")) < names.index((True, "simplify"))


def test_fold_records_the_ops_it_folded():
    b = Builder()
    p = b.param(TensorType(dtypes.float32, (3,)))
    one = b.emit(ops.constant, [], value=np.float32(1)).result
    two = b.emit(ops.add, [one, one]).result
    four = b.emit(ops.add, [two, two]).result
    k = b.emit(ops.broadcast_in_dim, [four], shape=(3,), dims=()).result
    log = PassLog()
    optimize(b.build([b.emit(ops.mul, [p, k]).result]), log=log)
    assert next(r for r in log if r.name == "fold").details["folded"] == 2


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_training_steps_report_their_passes(model):
    from benchmarks import passes
    step, args = passes.mlp_step() if model == "mlp" else passes.cnn_step(batch=4)
    table = passes.pass_table(step, args)
    removed = sum(table["removed"][p] for p in passes.PASSES)
    assert table["traced"] - removed == table["optimized"]
    assert table["patterns"].get("broadcast-of-reshape") == 2     # the softmax's keepdims
