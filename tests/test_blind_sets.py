"""The blind sets: model programs written from the docs alone by helpers who never read the checker.

Each program under ``tests/blind/set*/`` (models) and ``tests/blind/place*/`` (placement on a mesh) is correct as
written and carries planted one-line mistakes as comments (``# plant[id kind static|runtime]: replacement``; the
rule is ``tests/blind/measure.py``'s docstring). Held here, per program: it runs; ``typed-xmap check`` passes it in
default and ``--strict`` mode; and every planted mistake that was caught statically when the set was last measured
stays caught (``tests/blind/expected.json``). One mypy run checks a program with all those mutants
(``measure.check_many``). A correct program the checker wrongly rejected when measured is recorded in
``false_errors``: it must still show errors (fixing it must update the record). The plants it missed are not checked
here: ``python tests/blind/measure.py tests/blind/setN`` measures a whole set, missed plants included, and its
totals are the figures issue reports give.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BLIND = Path(__file__).parent / "blind"
sys.path.insert(0, str(BLIND))
import measure  # noqa: E402

EXPECTED = json.loads((BLIND / "expected.json").read_text())
CAUGHT: set[str] = set(EXPECTED["caught"])
"""``set/program/plant`` of every plant caught statically when the set was last measured."""
FALSE_ERRORS: set[str] = set(EXPECTED["false_errors"])
"""``set/program/mode`` of the correct programs the checker wrongly rejected when measured."""
RUN_CONFLICTS: dict[str, str] = EXPECTED["run_conflicts"]
"""``set/program`` -> why: programs written as correct whose run on an Explicit mesh meets a real resource
conflict that JAX itself rejects (and typed_xmap raises as ``AxisResourceConflict``)."""
SETS = sorted(p for p in BLIND.iterdir() if p.is_dir() and p.name.startswith(("set", "place")))
PROGRAMS = [p for s in SETS for p in sorted(s.glob("*.py")) if not p.name.startswith("_")]
pytestmark = pytest.mark.slow


def _key(program: Path, tail: str) -> str:
    return f"{program.parent.name}/{program.name}/{tail}"


def _copy_set(program: Path, into: Path) -> None:
    for f in program.parent.iterdir():
        if f.is_file() and f.suffix == ".py":
            shutil.copy(f, into / f.name)


def _assert_clean(program: Path, mode: str, errors: list[tuple[int, str]], out: str) -> None:
    key = _key(program, mode)
    if key in FALSE_ERRORS:
        assert errors, f"{key} is now clean: remove it from false_errors in tests/blind/expected.json"
    else:
        assert errors == [], out


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_checker_on_the_program_and_its_caught_plants(program: Path, mypy_cache: Path, tmp_path: Path) -> None:
    # the worker's mypy cache, a folder per set of flags: --strict changes the options every module's entry is
    # keyed by, so one folder for both modes would make each run rewrite the other's entries (jax's and the
    # stubs' too) and start cold; check-strict is shared with the other `typed-xmap check --strict` runs
    _copy_set(program, tmp_path)
    source = program.read_text()
    lines = {pid: number for number, pid, *_ in measure.plants(source)}
    held = measure.write_mutants(source, program.name, tmp_path, {p for p in lines if _key(program, p) in CAUGHT})
    found, out = measure.check_many(tmp_path, [program.name, *held.values()], False, mypy_cache / "check-default")
    clean = found[program.name]
    _assert_clean(program, "default", clean, out)
    missed = [f"{pid} (line {lines[pid]})" for pid, name in held.items() if not set(found[name]) - set(clean)]
    assert missed == [], f"plants caught when last measured are missed now: {missed}\n{out}"
    strict, out = measure.check(tmp_path, program.name, True, mypy_cache / "check-strict")
    _assert_clean(program, "strict", strict, out)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_correct_program_runs(program: Path, tmp_path: Path) -> None:
    _copy_set(program, tmp_path)
    done = subprocess.run(
        [sys.executable, program.name], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    key = f"{program.parent.name}/{program.name}"
    if key in RUN_CONFLICTS:
        assert done.returncode != 0, f"{key} now runs: remove it from run_conflicts in tests/blind/expected.json"
        assert "typed_xmap.AxisResourceConflict" in done.stderr, done.stderr[-3000:]
    else:
        assert done.returncode == 0, done.stderr[-3000:]
