"""Shared test settings. Hypothesis: no deadline (first calls compile), bounded examples.
Tests run compiled code from the first call (untiered); tests/test_tiered.py tests the tiers."""
import os

os.environ.setdefault("TRACEJIT_TIERED", "0")   # before tracejit reads its config
# No compile worker processes beside the test processes (tests/test_compile_workers.py has
# its own): two pytest workers on two cores are busy enough.
os.environ.setdefault("TRACEJIT_COMPILE_WORKERS", "0")

from hypothesis import HealthCheck, settings

# 20 examples a test (hypothesis's own default is 100): CI draws new ones at every run, and
# hypothesis's own work per example (drawing, seeding, replay bookkeeping) was 8 % of make
# test's CPU time, 92 % of tests/test_ir_ops.py's, where 40 examples took 32 s and 10 took 15 s.
# TRACEJIT_HYPOTHESIS_EXAMPLES=200 make test searches deeper.
settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("TRACEJIT_HYPOTHESIS_EXAMPLES", 20)),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _direct_compiler_had_no_internal_error():
    """codegen/direct sends a kernel it fails on to Numba, so a bug in it would only show as
    a slower compile: fail the run instead."""
    yield
    from tracejit.codegen import direct
    report = os.environ.get("TRACEJIT_DIRECT_REFUSALS")    # a file to list the reasons in
    if report:
        with open(report, "a") as f:
            f.writelines(f"{why}\n" for why in direct.refused().values())
    errors = {why for why in direct.refused().values()
              if why.startswith(direct.INTERNAL_ERROR)}
    assert not errors, errors


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """A kernel cache folder of the test's own, seen as a new process sees it."""
    import tracejit
    from cache_helpers import as_new_process
    root = tmp_path / "cache"
    monkeypatch.setattr(tracejit.config, "cache_dir", str(root))
    as_new_process(monkeypatch)
    return root
