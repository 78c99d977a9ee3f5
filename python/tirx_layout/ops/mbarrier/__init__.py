"""The ``T.mbarrier_*`` ops: their spec (``spec.py``) and their lowering, the same on every target (``lower.py``).

Example:
    >>> [spec.name for spec in SPECS]
    ['mbarrier_init', 'mbarrier_arrive', 'mbarrier_expect_tx', 'mbarrier_arrive_expect_tx', 'mbarrier_wait']
"""

from . import lower
from .spec import (
    MBARRIER_ARRIVE,
    MBARRIER_ARRIVE_EXPECT_TX,
    MBARRIER_EXPECT_TX,
    MBARRIER_INIT,
    MBARRIER_WAIT,
)

#: The mbarrier ops, in the order a barrier's life uses them.
SPECS = (MBARRIER_INIT, MBARRIER_ARRIVE, MBARRIER_EXPECT_TX, MBARRIER_ARRIVE_EXPECT_TX, MBARRIER_WAIT)

__all__ = [
    "MBARRIER_ARRIVE",
    "MBARRIER_ARRIVE_EXPECT_TX",
    "MBARRIER_EXPECT_TX",
    "MBARRIER_INIT",
    "MBARRIER_WAIT",
    "SPECS",
    "lower",
]
