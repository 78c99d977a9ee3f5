"""mbarrier facts (PTX ISA, "Contents of the mbarrier object" and ``mbarrier.init`` / ``mbarrier.expect_tx`` /
``mbarrier.try_wait.parity``): the counts an mbarrier keeps are 20-bit.

Example:
    >>> MAX_ARRIVAL_COUNT, MAX_TX_COUNT
    (1048575, 1048575)
"""

from __future__ import annotations

#: The expected arrival count ``mbarrier.init`` sets: 1 .. 2^20 - 1.
MAX_ARRIVAL_COUNT = (1 << 20) - 1
#: The transaction bytes one expect-tx adds (the tx-count stays within +-(2^20 - 1)).
MAX_TX_COUNT = (1 << 20) - 1
#: A wait names the phase it waits for by its parity.
PARITIES = (0, 1)
