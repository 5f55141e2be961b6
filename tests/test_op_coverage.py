"""Every op in the registry has a rule in every stage that needs one."""
from tracejit.autodiff.jvp_rules import JVP_RULES
from tracejit.autodiff.partials import PARTIALS
from tracejit.autodiff.reverse import STRUCTURAL
from tracejit.autodiff.vjp_rules import VJP_RULES
from tracejit.ir import OPS


def _missing(table) -> list[str]:
    return sorted(name for name, opdef in OPS.items()
                  if opdef.differentiable and opdef not in PARTIALS and opdef not in table
                  and opdef not in STRUCTURAL)


def test_every_differentiable_op_has_a_vjp_rule():
    assert _missing(VJP_RULES) == [], "differentiable ops without a reverse-mode rule"


def test_every_differentiable_op_has_a_jvp_rule():
    assert _missing(JVP_RULES) == [], "differentiable ops without a forward-mode rule"


def test_rule_tables_only_name_differentiable_ops():
    for table in (PARTIALS, VJP_RULES, JVP_RULES):
        assert all(opdef.differentiable for opdef in table), table


def test_every_op_has_a_codegen_rule():
    from tracejit.codegen.emitters import RULES
    assert sorted(name for name, opdef in OPS.items() if opdef not in RULES) == [], \
        "ops without a code generation rule in tracejit/codegen/emitters.py"
