"""The fuzz campaign (tests/fuzz_campaign.py) over the public surface: every outcome correct or a named error.

CI runs a slice (a few cases of each family, well under a minute). ``TYPED_XMAP_FUZZ_EXAMPLES=N`` (cases per
family) runs a larger campaign, e.g. ``TYPED_XMAP_FUZZ_EXAMPLES=300 pytest tests/test_fuzz_campaign.py -s``;
``python tests/fuzz_campaign.py 300`` prints the same counts without pytest, per family, each family in a
process of its own (an abort is that family's crash); a case running past ``HANG_SECONDS`` is a hang.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
try:
    import fuzz_campaign
finally:
    sys.path.pop(0)

FULL = int(os.environ.get("TYPED_XMAP_FUZZ_EXAMPLES", "0"))


def _check(tally: fuzz_campaign.Tally) -> None:
    print(tally.report())
    bad = {outcome: tally.counts[outcome] for outcome in fuzz_campaign.BAD}
    assert not any(bad.values()), tally.report()
    assert tally.counts["correct"] + tally.counts["named error"] > 0, "no case ran"


@pytest.mark.parametrize("family", sorted(fuzz_campaign.FAMILIES))
def test_a_slice_of_the_campaign(family):
    _check(fuzz_campaign.run(8, 30.0, {family: fuzz_campaign.FAMILIES[family]}, derandomize=True))


def test_every_public_name_is_fuzzed_or_says_why_not():
    """A function added to typed_xmap, typed_xmap.numpy or tx.random joins a family (COVERS) or NOT_FUZZED
    with its reason: none is forgotten."""
    covered = set().union(*fuzz_campaign.COVERS.values())
    public = fuzz_campaign.public_names()
    assert set(fuzz_campaign.COVERS) == set(fuzz_campaign.FAMILIES)
    assert not public - covered - set(fuzz_campaign.NOT_FUZZED), "public names no family calls"
    assert not (covered | set(fuzz_campaign.NOT_FUZZED)) - public, "names that are not public (stale)"
    assert not covered & set(fuzz_campaign.NOT_FUZZED), "both fuzzed and exempt"


@pytest.mark.skipif(not FULL, reason="set TYPED_XMAP_FUZZ_EXAMPLES=N (cases per family) for the full campaign")
def test_the_full_campaign():
    _check(fuzz_campaign.run(FULL, 3600.0))
