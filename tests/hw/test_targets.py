"""CUDA architectures and the instructions they have, against the PTX ISA's lists (tcgen05 "Target ISA notes":
sm_100a, sm_101a renamed sm_110a, and the f targets of those families, sm_103 included; wgmma: sm_90a;
cp.async.bulk.tensor: sm_90 and later)."""

from __future__ import annotations

import pytest

from tirx_layout.hw.targets import parse_arch, targets_with


@pytest.mark.parametrize(
    ("name", "tcgen05"),
    [
        ("sm_100a", True),
        ("sm_100f", True),
        ("sm_101a", True),
        ("sm_103a", True),
        ("sm_103f", True),
        ("sm_110a", True),
        ("sm_110f", True),
        ("sm_100", False),
        ("sm_103", False),
        ("sm_120a", False),
        ("sm_121a", False),
        ("sm_90a", False),
        ("sm_90", False),
        ("sm_80", False),
    ],
)
def test_tcgen05_targets(name, tcgen05):
    assert parse_arch(name).has("tcgen05") is tcgen05


def test_wgmma_is_sm_90a_only():
    assert targets_with("wgmma") == ["sm_90a"]
    assert not parse_arch("sm_100a").has("wgmma")


@pytest.mark.parametrize("name", ["sm_999z", "sm_999", "sm_80a", "sm_90f", "sm_100x", "compute_100a", "100a", ""])
def test_unknown_architectures_are_refused_by_name(name):
    with pytest.raises(ValueError, match=f"unknown CUDA architecture {name!r}"):
        parse_arch(name)


@pytest.mark.parametrize(
    ("name", "tma"),
    [("sm_90", True), ("sm_90a", True), ("sm_100a", True), ("sm_120", True), ("sm_89", False), ("sm_80", False)],
)
def test_tma_targets(name, tma):
    assert parse_arch(name).has("tma") is tma


def test_unknown_instruction_is_a_key_error():
    with pytest.raises(KeyError, match="no target facts for instruction 'ldmatrix'"):
        parse_arch("sm_100a").has("ldmatrix")
