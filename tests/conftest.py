"""Shared test settings. Hypothesis: no deadline (first calls compile), bounded examples.
Tests run compiled code from the first call (untiered); tests/test_tiered.py tests the tiers."""
import os

os.environ.setdefault("TRACEJIT_TIERED", "0")   # before tracejit reads its config
# No compile worker processes beside the test processes (tests/test_compile_workers.py has
# its own): two pytest workers on two cores are busy enough.
os.environ.setdefault("TRACEJIT_COMPILE_WORKERS", "0")

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("TRACEJIT_HYPOTHESIS_EXAMPLES", 40)),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")
