"""The blind communication sets: small sharded programs written from the docs alone by helpers who never read the
checker (``tests/blind/comm*/``, the format in ``tests/blind/comm_measure.py``'s docstring). Held here, per
program, on an Explicit 8-device mesh (data=4, model=2): ``typed-xmap check`` passes it, and the set of its jitted
functions whose listed collectives (``--comm``) equal the compiled HLO's is exactly the one recorded in
``tests/blind/comm_expected.json`` when the set was last measured. A new agreement must be recorded (the figure
only grows); a lost one fails. ``python tests/blind/comm_measure.py tests/blind/commN`` prints each function's two
lists, Auto meshes too: the figures issue reports give."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from jax.sharding import AxisType

BLIND = Path(__file__).parent / "blind"
sys.path.insert(0, str(BLIND))
import comm_measure  # noqa: E402

AGREE: set[str] = set(json.loads((BLIND / "comm_expected.json").read_text())["agree"])
"""``set/program/function`` of each function whose listed collectives equal the compiled HLO's (Explicit)."""
PROGRAMS = sorted(
    p for s in BLIND.iterdir() if s.is_dir() and s.name.startswith("comm") for p in s.glob("*.py") if p.name[0] != "_"
)
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_listed_collectives_agree_as_recorded(program: Path) -> None:
    result = comm_measure.measure(program, (AxisType.Explicit,))
    assert result["errors"] == [], result["errors"]
    rows = result["functions"]
    assert isinstance(rows, dict)
    prefix = f"{program.parent.name}/{program.name}/"
    agree = {prefix + name for name, by_type in rows.items() if by_type["Explicit"].get("agree")}
    recorded = {key for key in AGREE if key.startswith(prefix)}
    lost = {key: rows[key.removeprefix(prefix)]["Explicit"] for key in recorded - agree}
    assert not lost, f"listed collectives no longer equal the compiled HLO's: {lost}"
    assert agree == recorded, f"new agreements: record them in tests/blind/comm_expected.json: {agree - recorded}"
