"""A custom_vjp rule travels with the Function: printing and parsing the IR keeps it."""
import numpy as np
import pytest

import tracejit
from tracejit.autodiff import vjp_function
from tracejit.ir import interpret, parse


@tracejit.custom_vjp
def _sine_with_doubled_gradient(x):
    return np.sin(x)


_sine_with_doubled_gradient.defvjp(lambda x: (np.sin(x), x),
                                   lambda x, g: (2 * g * np.cos(x),))


def _loss(x):
    return _sine_with_doubled_gradient(x).sum()


def test_a_printed_and_parsed_function_is_differentiated_with_its_custom_rule():
    x = np.linspace(0.1, 1.0, 4)
    fn = tracejit.make_ir(_loss)(x)
    text = str(fn)
    assert "custom_vjp" in text                       # the rule's name is in the text
    parsed = parse(text)
    loss, grad = interpret(vjp_function(parsed, wrt=[0]), [x, np.float64(1.0)])
    np.testing.assert_allclose(loss, np.sin(x).sum(), rtol=1e-12)
    np.testing.assert_allclose(grad, 2 * np.cos(x), rtol=1e-12)   # the rule's, not cos(x)


def test_a_call_whose_rule_this_process_lacks_is_an_error_not_an_ordinary_call():
    text = str(tracejit.make_ir(_loss)(np.ones(3))).replace("custom_vjp", "custom_vjp99")
    with pytest.raises(LookupError, match="custom_vjp rule that this process has not defined"):
        vjp_function(parse(text), wrt=[0])
