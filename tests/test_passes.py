"""The rewriting passes before fusion: simplify, CSE and constant folding."""
import numpy as np

from tracejit.ir import Builder, TensorType, dtypes, ops, verify
from tracejit.ir.passes import cse, dce, fold_constants, simplify

f32 = np.float32


def test_simplify_removes_identity_converts_and_merges_broadcasts():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    c = b.emit(ops.convert, [x], dtype=dtypes.float32).result
    b1 = b.emit(ops.broadcast_in_dim, [c], shape=(2, 3), dims=(1,)).result
    b2 = b.emit(ops.broadcast_in_dim, [b1], shape=(5, 2, 3), dims=(1, 2)).result
    fn = dce(simplify(b.build([b2])))
    verify(fn)
    assert [op.name for op in fn.ops] == ["broadcast_in_dim"]
    assert fn.ops[0].attrs["dims"] == (2,)
    assert np.array_equal(fn(np.arange(3, dtype=f32))[0],
                          np.broadcast_to(np.arange(3, dtype=f32), (5, 2, 3)))


def test_cse_merges_equal_ops_but_not_side_effects():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    e1 = b.emit(ops.exp, [x]).result
    e2 = b.emit(ops.exp, [x]).result
    b.emit(ops.debug_print, [x], fmt="{}")
    b.emit(ops.debug_print, [x], fmt="{}")
    fn = cse(b.build([b.emit(ops.add, [e1, e2]).result]))
    assert [op.name for op in fn.ops].count("exp") == 1
    assert [op.name for op in fn.ops].count("debug_print") == 2


def test_constant_folding_keeps_broadcast_scalars_scalar():
    b = Builder()
    x = b.param(TensorType(dtypes.float32, (3,)))
    one = b.emit(ops.constant, [], value=np.float32(1)).result
    two = b.emit(ops.add, [one, one]).result
    bc = b.emit(ops.broadcast_in_dim, [two], shape=(3,), dims=()).result
    fn = fold_constants(b.build([b.emit(ops.mul, [x, bc]).result]))
    consts = [op for op in fn.ops if op.name == "constant"]
    assert any(op.attrs["value"].shape == () and op.attrs["value"] == 2 for op in consts)
    assert "broadcast_in_dim" in [op.name for op in fn.ops]
