"""Test-wide settings.

Hypothesis explores new inputs on every local run (that is how it finds bugs); under CI (``CI`` set, as
``.ci/run`` does) it derandomises, so a landing is judged on the same examples every time and a newly
found counterexample shows up locally first instead of blocking an unrelated change.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
