"""Shared test settings. Hypothesis: no deadline (first calls compile), bounded examples."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=int(os.environ.get("TRACEJIT_HYPOTHESIS_EXAMPLES", 40)),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")
