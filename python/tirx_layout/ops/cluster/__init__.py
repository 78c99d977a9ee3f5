"""The cluster ops (``T.cluster_sync``, ``T.cluster_arrive``, ``T.cluster_wait``, ``T.mbarrier_arrive_peer``,
``T.dsmem_store``, ``T.dsmem_load``): their spec (``spec.py``) and their lowering (``lower.py``).

Example:
    >>> [spec.name for spec in SPECS][:3]
    ['cluster_sync', 'cluster_arrive', 'cluster_wait']
"""

from . import lower
from .spec import CLUSTER_ARRIVE, CLUSTER_SYNC, CLUSTER_WAIT, DSMEM_LOAD, DSMEM_STORE, MBARRIER_ARRIVE_PEER

#: The cluster ops.
SPECS = (CLUSTER_SYNC, CLUSTER_ARRIVE, CLUSTER_WAIT, MBARRIER_ARRIVE_PEER, DSMEM_STORE, DSMEM_LOAD)

__all__ = [
    "CLUSTER_ARRIVE",
    "CLUSTER_SYNC",
    "CLUSTER_WAIT",
    "DSMEM_LOAD",
    "DSMEM_STORE",
    "MBARRIER_ARRIVE_PEER",
    "SPECS",
    "lower",
]
