"""CUDA architectures as data: which ``sm_XY[a|f]`` names exist and which instructions each one has.

Facts from the PTX ISA (9.x; "Target ISA Notes" of each instruction, and the list of target architectures):

* an architecture is ``sm_<major><minor>``, optionally suffixed ``a`` (architecture-specific: the features of that
  exact chip) or ``f`` (family-specific: the features every later chip of the same family keeps);
* ``tcgen05`` (tensor memory and the fifth-generation tensor-core instructions) exists on ``sm_100a``, ``sm_101a``
  (renamed ``sm_110a`` from PTX ISA 9.0), ``sm_103a``, ``sm_110a`` and the ``f`` targets of those families
  (``sm_100f``, ``sm_101f``/``sm_110f``, ``sm_103f``). Plain ``sm_100`` lacks it (the suffix is what enables
  architecture-specific instructions), and so do ``sm_12x`` and everything before Blackwell;
* ``wgmma`` exists on ``sm_90a`` only;
* the warp-level ``mma.sync.aligned.m16n8k*`` exists on every target from ``sm_80`` (its ``m16n8k8`` f16 form
  from ``sm_75``, its 8-bit float forms from ``sm_89``: ``hw.mma_sync`` checks each form), including the
  consumer Blackwell parts ``sm_120``/``sm_121`` that have no ``tcgen05``; so does ``cp.async`` (the
  non-bulk asynchronous copy with its commit and wait groups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The ``sm_XY`` numbers the PTX ISA and nvcc know, oldest first.
KNOWN_SM = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)
#: The numbers that also exist with an ``a`` suffix, and with an ``f`` suffix.
ARCH_SPECIFIC_SM = (90, 100, 101, 103, 110, 120, 121)
FAMILY_SPECIFIC_SM = (100, 101, 103, 110, 120, 121)


def _defined(sm: int, suffix: str) -> bool:
    """Whether the PTX ISA defines ``sm_<sm><suffix>``."""
    return sm in KNOWN_SM and (
        suffix == "" or (suffix == "a" and sm in ARCH_SPECIFIC_SM) or (suffix == "f" and sm in FAMILY_SPECIFIC_SM)
    )


#: Instruction family -> the architectures that have it (by ``(number, suffix)``): tensor memory and its MMA on the
#: datacenter Blackwell parts' ``a``/``f`` targets, Hopper's warpgroup MMA on ``sm_90a`` only, the Tensor Memory
#: Accelerator (``cp.async.bulk.tensor``) on every target from ``sm_90``, the warp-level ``mma.sync`` (and
#: ``ldmatrix``, ``cp.async``) on every target from ``sm_80`` (PTX ISA, each instruction's "Target ISA notes").
INSTRUCTION_TARGETS = {
    "tcgen05": {(sm, suffix) for sm in (100, 101, 103, 110) for suffix in ("a", "f")},
    "wgmma": {(90, "a")},
    "tma": {(sm, suffix) for sm in KNOWN_SM if sm >= 90 for suffix in ("", "a", "f") if _defined(sm, suffix)},
    # packed float32 arithmetic (add/mul/fma.rn.f32x2): "requires .target sm_100 or higher"
    "f32x2": {(sm, suffix) for sm in KNOWN_SM if sm >= 100 for suffix in ("", "a", "f") if _defined(sm, suffix)},
    "mmasync": {(sm, suffix) for sm in KNOWN_SM if sm >= 80 for suffix in ("", "a", "f") if _defined(sm, suffix)},
    "cpasync": {(sm, suffix) for sm in KNOWN_SM if sm >= 80 for suffix in ("", "a", "f") if _defined(sm, suffix)},
    # mma.sync's block-scaled forms (.kind::mxf8f6f4 / mxf4 / mxf4nvf4 .block_scale): "requires sm_120a and are
    # supported on sm_120f or higher in the same family from PTX ISA version 8.8" (the consumer Blackwell family)
    "mmasync_block_scale": {(sm, suffix) for sm in (120, 121) for suffix in ("a", "f")},
    # thread-block clusters: barrier.cluster, mapa, %cluster_ctarank, multicast::cluster ("requires sm_90 or higher")
    "cluster": {(sm, suffix) for sm in KNOWN_SM if sm >= 90 for suffix in ("", "a", "f") if _defined(sm, suffix)},
}

_ARCH = re.compile(r"sm_(\d+)([af]?)")


@dataclass(frozen=True)
class Arch:
    """A CUDA architecture: ``sm`` (``100`` for ``sm_100a``) and ``suffix`` (``""``, ``"a"`` or ``"f"``)."""

    sm: int
    suffix: str

    def __str__(self) -> str:
        return f"sm_{self.sm}{self.suffix}"

    def has(self, instruction: str) -> bool:
        """Whether this architecture has ``instruction`` (a key of :data:`INSTRUCTION_TARGETS`).

        Example:
            >>> parse_arch("sm_100a").has("tcgen05"), parse_arch("sm_90a").has("tcgen05")
            (True, False)
        """
        if instruction not in INSTRUCTION_TARGETS:
            raise KeyError(f"no target facts for instruction {instruction!r}; known: {sorted(INSTRUCTION_TARGETS)}")
        return (self.sm, self.suffix) in INSTRUCTION_TARGETS[instruction]


def parse_arch(name: str) -> Arch:
    """The architecture ``name`` (``"sm_100a"``), checked against the ones the PTX ISA defines.

    Example:
        >>> parse_arch("sm_103f")
        Arch(sm=103, suffix='f')
        >>> parse_arch("sm_999z")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown CUDA architecture 'sm_999z': expected sm_<number>[a|f] with a number in 50, 52, ..., 121
    """
    match = _ARCH.fullmatch(str(name))
    sm = int(match.group(1)) if match else None
    suffix = match.group(2) if match else ""
    if sm is None or not _defined(sm, suffix):
        numbers = ", ".join(str(n) for n in KNOWN_SM)
        raise ValueError(
            f"unknown CUDA architecture {name!r}: expected sm_<number>[a|f] with a number in {numbers}"
            + (f" ({name} has no '{suffix}' variant)" if sm in KNOWN_SM else "")
        )
    return Arch(sm, suffix)


def targets_with(instruction: str) -> list[str]:
    """The architectures that have ``instruction``, sorted.

    Example:
        >>> targets_with("tcgen05")
        ['sm_100a', 'sm_100f', 'sm_101a', 'sm_101f', 'sm_103a', 'sm_103f', 'sm_110a', 'sm_110f']
    """
    return [str(Arch(sm, suffix)) for sm, suffix in sorted(INSTRUCTION_TARGETS[instruction])]


#: Shared memory one CTA may use, in KB, by compute capability ``major * 10 + minor`` (CUDA C++ Programming Guide,
#: "Technical Specifications per Compute Capability": "Maximum amount of shared memory per thread block", the
#: opt-in maximum a kernel reaches through dynamic shared memory). Capabilities not listed get the 48 KB every CUDA
#: device guarantees.
MAX_SHARED_KB_PER_BLOCK = {
    70: 96,
    72: 96,
    75: 64,
    80: 163,
    86: 99,
    87: 163,
    89: 99,
    90: 227,
    100: 227,
    101: 227,
    103: 227,
    110: 227,
    120: 99,
    121: 99,
}
#: What every CUDA device allows a CTA without opting in (and the most static ``__shared__`` memory may take).
PORTABLE_SHARED_KB_PER_BLOCK = 48


def max_shared_bytes(arch: str) -> int:
    """The most shared memory (bytes) one CTA may use on ``arch``: what a kernel's dynamic shared memory may ask for.

    Example:
        >>> max_shared_bytes("sm_90a"), max_shared_bytes("sm_100a"), max_shared_bytes("sm_86")
        (232448, 232448, 101376)
    """
    return 1024 * MAX_SHARED_KB_PER_BLOCK.get(parse_arch(arch).sm, PORTABLE_SHARED_KB_PER_BLOCK)
