"""The verifier catches each way a hand-built or transformed Function can be malformed.

Passes and transforms build Functions without the Builder's checks, so these are the bugs the
verifier exists to catch where they happen.
"""
import pytest

from tracejit.ir import (Builder, Function, Op, TensorType, Value, VerificationError,
                         as_dtype, ops, verify)

F32 = TensorType(as_dtype("f32"), (2,))


def two_ops():
    b = Builder("g")
    x = b.param(F32, "x")
    y = b.emit(ops.neg, [x]).result
    z = b.emit(ops.exp, [y]).result
    return x, y, z, b.build([z])


def test_well_formed_function_verifies():
    *_, fn = two_ops()
    assert verify(fn) is fn


def test_use_before_definition():
    x, y, z, fn = two_ops()
    fn.ops.reverse()
    with pytest.raises(VerificationError, match="used before it is defined"):
        verify(fn)


def test_operand_from_another_function_is_undefined():
    stranger = Value(F32, None, "stranger")
    b = Builder()
    b.param(F32, "x")
    y = b.emit(ops.neg, [stranger]).result
    with pytest.raises(VerificationError, match="used before it is defined"):
        verify(b.build([y]))


def test_value_defined_twice():
    x, y, z, fn = two_ops()
    fn.ops.append(fn.ops[0])
    with pytest.raises(VerificationError, match="defined twice"):
        verify(fn)


def test_parameter_listed_twice():
    x, y, z, fn = two_ops()
    fn.params.append(x)
    with pytest.raises(VerificationError, match="listed twice"):
        verify(fn)


def test_result_types_that_disagree_with_the_rule():
    x, y, z, fn = two_ops()
    fn.ops[0].results[0].type = TensorType(as_dtype("f64"), (2,))
    with pytest.raises(VerificationError, match="rule says"):
        verify(fn)


def test_wrong_number_of_results():
    b = Builder()
    x = b.param(F32, "x")
    bad = Op(ops.neg, [x], {}, [F32, F32])
    with pytest.raises(VerificationError, match="rule says"):
        verify(Function("f", [x], [bad], [bad.results[0]]))


def test_ill_typed_operands_name_the_op():
    b = Builder()
    x = b.param(TensorType(as_dtype("i32"), (2,)), "x")
    bad = Op(ops.exp, [x], {}, [x.type], loc="model.py:7")
    with pytest.raises(VerificationError, match=r"op 0 \(exp, model.py:7\).*floating"):
        verify(Function("f", [x], [bad], [bad.result]))


def test_results_never_defined():
    x, y, z, fn = two_ops()
    fn.results.append(Value(F32))
    with pytest.raises(VerificationError, match="never defined"):
        verify(fn)


def test_op_whose_results_point_elsewhere():
    x, y, z, fn = two_ops()
    fn.ops[1].results[0].op = fn.ops[0]
    with pytest.raises(VerificationError, match="point back"):
        verify(fn)


def test_bad_attributes_are_reported():
    x, y, z, fn = two_ops()
    fn.ops[0].attrs["bogus"] = 1
    with pytest.raises(VerificationError, match="unknown attributes"):
        verify(fn)


def test_nested_region_is_verified():
    inner = Builder("body")
    p = inner.param(F32, "p")
    q = inner.emit(ops.neg, [p]).result
    body = inner.build([q])
    b = Builder()
    x = b.param(F32, "x")
    c = b.emit(ops.call, [x], regions=[body]).result
    fn = b.build([c])
    verify(fn)
    body.ops.append(body.ops[0])
    with pytest.raises(VerificationError, match="@body.*defined twice"):
        verify(fn)


def test_unconvertible_attribute_value_is_a_verification_error():
    b = Builder()
    x = b.param(TensorType(as_dtype("f32"), (2, 3)), "x")
    y = b.emit(ops.reduce_sum, [x], axes=[0]).result
    fn = b.build([y])
    fn.ops[0].attrs["axes"] = "zero"
    with pytest.raises(VerificationError, match="reduce_sum"):
        verify(fn)
