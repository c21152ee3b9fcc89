"""The fuzz campaign (tests/fuzz_campaign.py) over the public surface: every outcome correct or a named error.

CI runs a slice (a few cases of each family, well under a minute). ``TYPED_XMAP_FUZZ_EXAMPLES=N`` (cases per
family) runs a larger campaign, e.g. ``TYPED_XMAP_FUZZ_EXAMPLES=300 pytest tests/test_fuzz_campaign.py -s``;
``python tests/fuzz_campaign.py 300`` prints the same counts without pytest.
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


@pytest.mark.skipif(not FULL, reason="set TYPED_XMAP_FUZZ_EXAMPLES=N (cases per family) for the full campaign")
def test_the_full_campaign():
    _check(fuzz_campaign.run(FULL, 3600.0))
