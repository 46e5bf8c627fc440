"""Property tests are reproducible: hypothesis uses a fixed seed unless asked otherwise
(``HYPOTHESIS_PROFILE=explore`` draws fresh examples on every run)."""

import os

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
