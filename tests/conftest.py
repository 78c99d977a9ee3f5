"""Shared test configuration: hypothesis profiles sized for CI, wider with TIRX_LAYOUT_FUZZ_EXAMPLES."""

import os

from hypothesis import HealthCheck, settings

_examples = int(os.environ.get("TIRX_LAYOUT_FUZZ_EXAMPLES", "0"))
settings.register_profile(
    "tirx_layout",
    max_examples=_examples or 300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=not _examples,  # CI runs a fixed, bounded sample; a widened run explores freshly
)
settings.load_profile("tirx_layout")

#: Examples per algebra law: "a few thousand random layouts each" in CI, more with TIRX_LAYOUT_FUZZ_EXAMPLES.
LAW_EXAMPLES = max(_examples, 2000)
