"""Property tests are reproducible: hypothesis uses a fixed seed unless asked otherwise
(``HYPOTHESIS_PROFILE=explore`` draws fresh examples on every run). The quick tier
(``TENFERRO_TEST_SAMPLE``, see sampling.py) draws a fifth of the examples, with the same
fixed seed."""

import os

from hypothesis import settings
from sampling import PER_GROUP

settings.register_profile("deterministic", derandomize=True, deadline=None)
settings.register_profile("quick", derandomize=True, deadline=None, max_examples=20)
settings.register_profile("explore", deadline=None, max_examples=500)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "deterministic" if PER_GROUP is None else "quick")
)
