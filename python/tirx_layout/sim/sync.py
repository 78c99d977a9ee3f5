"""The ``sync`` helpers' executor (``ir/device_calls`` family ``sync``), from the PTX ISA:

* ``elect``: ``elect.sync _|p, 0xffffffff`` (``warps.elect_sync``): 1 on the lowest lane of each executing warp;
* ``fence_proxy_async``: ``fence.proxy.async.shared::cta`` -- the executing threads' generic-proxy writes to shared
  memory become visible to the async proxy, through which ``tcgen05.mma``/``cp``, ``wgmma`` and TMA stores read
  (``memory.Memory.fence_proxy``); an async-proxy read of a write its writer has not fenced is an error there.

Example:
    >>> HELPERS.knows("elect"), HELPERS.knows("fence_proxy_async"), HELPERS.knows("fence_proxy_global")
    (True, True, False)
"""

from __future__ import annotations

from .dispatch import HelperTable
from .warps import elect_sync

__all__ = ["HELPERS"]


def _elect(interp, args):
    return elect_sync(interp)


def _fence_proxy_async(interp, args) -> None:
    threads = interp.global_ids[interp.mask]
    for memory in {id(m): m for m in interp.memories.values()}.values():
        if memory.scope == "shared":
            memory.fence_proxy(threads)


#: The sync executor: both helpers by name.
HELPERS = HelperTable("sync", {"elect": _elect, "fence_proxy_async": _fence_proxy_async})
