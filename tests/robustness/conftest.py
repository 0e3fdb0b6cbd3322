"""Hypothesis settings for the robustness tests.

The default profile, ``picklable-ci``, is derandomized (examples derived from
each test's source, the same on every run and machine) and keeps no example
database, so CI is deterministic and leaves no files behind. For a longer,
random search run ``HYPOTHESIS_PROFILE=picklable-explore pytest tests/robustness``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "picklable-ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=150,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "picklable-explore",
    derandomize=False,
    database=None,
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "picklable-ci"))
