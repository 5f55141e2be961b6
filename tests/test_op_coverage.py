"""Every op in the registry has a real rule in every stage, and every fact the stages need is on
its OpDef: reference semantics, derivatives (or marked non-differentiable), code generation (a
kernel rule or an explicit non-kernel path: no placeholders), a layout op's index map, and a
way to reach it from NumPy code (or marked internal)."""
import importlib

import numpy as np
import pytest

from tracejit.autodiff.jvp_rules import JVP_RULES, REGION_JVP_RULES
from tracejit.autodiff.partials import PARTIALS
from tracejit.autodiff.reverse import STRUCTURAL
from tracejit.autodiff.vjp_rules import REGION_VJP_RULES, VJP_RULES
from tracejit.codegen import Plan  # imports every module that registers a codegen rule
from tracejit.codegen.emitters import KINDS, RULES
from tracejit.ir import OPS
from tracejit.ir.registry import CATEGORIES


def _missing(table, region_table) -> list[str]:
    return sorted(name for name, opdef in OPS.items()
                  if opdef.differentiable and opdef not in PARTIALS and opdef not in table
                  and opdef not in region_table and opdef not in STRUCTURAL)


def test_every_op_has_a_reference_implementation_and_a_category():
    for name, opdef in OPS.items():
        assert callable(opdef.impl) and callable(opdef.type_rule), name
        assert opdef.category in CATEGORIES, name
        assert set(opdef.kinds) <= set("biuf") and opdef.kinds, name


def test_every_differentiable_op_has_a_vjp_rule():
    assert _missing(VJP_RULES, REGION_VJP_RULES) == [], \
        "differentiable ops without a reverse-mode rule"


def test_every_differentiable_op_has_a_jvp_rule():
    assert _missing(JVP_RULES, REGION_JVP_RULES) == [], \
        "differentiable ops without a forward-mode rule"


def test_rule_tables_only_name_differentiable_ops():
    tables = (PARTIALS, VJP_RULES, JVP_RULES, REGION_VJP_RULES, REGION_JVP_RULES)
    for table in tables:
        assert all(opdef.differentiable for opdef in table), table
    for table in tables:
        assert all(callable(rule) for rule in table.values()), table


def test_partials_are_only_for_elementwise_ops():
    assert all(opdef.category == "elementwise" for opdef in PARTIALS)


def test_every_op_has_a_real_codegen_rule():
    assert Plan is not None
    missing = sorted(name for name, opdef in OPS.items() if opdef not in RULES)
    assert missing == [], "ops without a code generation rule (tracejit/codegen/emitters.py)"
    for opdef, (kind, rule) in RULES.items():
        assert kind in KINDS, (opdef, kind)
        assert rule is not None, f"{opdef.name}: a placeholder, not a rule"
        assert callable(rule) or all(callable(getattr(rule, f)) for f in ("init", "combine")), \
            opdef


@pytest.mark.parametrize("category,kind", [
    ("layout", "index"), ("reduction", "reduce"), ("matmul", "matmul"), ("movement", "movement"),
    ("gather", "kernel"), ("scatter", "kernel"), ("scan", "kernel"), ("sort", "movement"),
    ("linalg", "kernel")])
def test_codegen_rule_kinds_follow_the_category(category, kind):
    for opdef in OPS.values():
        if opdef.category == category:
            assert RULES[opdef][0] == kind, opdef


def test_every_layout_op_has_an_index_map():
    for name, opdef in OPS.items():
        assert (opdef.category == "layout") == callable(opdef.index_map), name


def test_costly_ops_are_elementwise():
    assert all(o.category == "elementwise" for o in OPS.values() if o.costly)


# -- reachability from NumPy code -------------------------------------------------------------

def _dispatch_modules():
    """The tracer's NumPy dispatch modules, wherever they live at the moment."""
    found = []
    for name in ("tracejit.tracer.numpy.dispatch", "tracejit.tracer.numpy",
                 "tracejit.tracer.numpy_api"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            pass
    assert found, "no NumPy dispatch module in tracejit.tracer"
    return found


def handled_numpy_functions() -> set:
    """Every NumPy function or ufunc the tracer's dispatch tables handle: any module-level dict
    keyed by NumPy callables (the ``__array_ufunc__`` and ``__array_function__`` tables)."""
    handled = set()
    for mod in _dispatch_modules():
        for value in vars(mod).values():
            if not isinstance(value, dict) or not value:
                continue
            keys = list(value)
            if not all(isinstance(k, np.ufunc) or getattr(k, "__module__", "") and
                       str(getattr(k, "__module__", "")).startswith("numpy") for k in keys
                       if callable(k)):
                continue
            handled.update(k for k, v in value.items() if callable(k) and v is not None)
    return handled


def _numpy_attr(name):
    """np.<name>, a dotted name too (linalg.solve: np.linalg.solve); None if there is none."""
    fn = np
    for part in name.split("."):
        fn = getattr(fn, part, None)
    return fn


def test_every_op_is_reachable_from_numpy_or_internal():
    handled = handled_numpy_functions()
    unreachable = []
    for name, opdef in OPS.items():
        if opdef.internal:
            assert not opdef.numpy, f"{name} is internal but names NumPy functions"
            continue
        if not opdef.numpy:
            unreachable.append(f"{name}: no numpy= names and not internal")
        for np_name in opdef.numpy:
            fn = _numpy_attr(np_name)
            if fn is None or fn not in handled:
                unreachable.append(f"{name}: np.{np_name} is not handled by the tracer")
    assert unreachable == []
