"""The blind sets: model programs written from the docs alone by helpers who never read the checker.

Each program under ``tests/blind/set*/`` is correct as written and carries planted one-line mistakes as comments
(``# plant[id kind static|runtime]: replacement``; the rule is ``tests/blind/measure.py``'s docstring). Held here:
every correct program runs and passes ``typed-xmap check`` in default and ``--strict`` mode, and every planted
mistake that was caught statically when the set was last measured stays caught (``tests/blind/expected.json``).
A correct program the checker wrongly rejected when measured is a strict xfail (fixing it must update the record).
The plants it missed are not run here (each costs a mypy run): ``python tests/blind/measure.py tests/blind/setN``
measures a whole set, missed plants included, and its totals are the figures issue reports give.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

BLIND = Path(__file__).parent / "blind"
sys.path.insert(0, str(BLIND))
import measure  # noqa: E402

EXPECTED = json.loads((BLIND / "expected.json").read_text())
CAUGHT: set[str] = set(EXPECTED["caught"])
"""``set/program/plant`` of every plant caught statically when the set was last measured."""
FALSE_ERRORS: set[str] = set(EXPECTED["false_errors"])
"""``set/program/mode`` of the correct programs the checker wrongly rejected when measured (strict xfails)."""
SETS = sorted(p for p in BLIND.iterdir() if p.is_dir() and p.name.startswith("set"))
PROGRAMS = [p for s in SETS for p in sorted(s.glob("*.py")) if not p.name.startswith("_")]


def _plant_cases() -> list[object]:
    cases = []
    for program in PROGRAMS:
        for number, pid, _kind, _visibility, replacement in measure.plants(program.read_text()):
            key = f"{program.parent.name}/{program.name}/{pid}"
            if key in CAUGHT:
                cases.append(pytest.param(program, number, replacement, id=key))
    return cases


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("blind-mypy-cache")


def _copy_set(program: Path, into: Path) -> None:
    for f in program.parent.iterdir():
        if f.is_file() and f.suffix == ".py":
            shutil.copy(f, into / f.name)


_CLEAN: dict[Path, list[tuple[int, str]]] = {}


def _clean_errors(program: Path, cache: Path) -> list[tuple[int, str]]:
    """The errors ``typed-xmap check`` reports on the correct program (once per program and worker)."""
    if program not in _CLEAN:
        with tempfile.TemporaryDirectory() as tmp:
            _copy_set(program, Path(tmp))
            _CLEAN[program] = measure.check(Path(tmp), program.name, False, cache)[0]
    return _CLEAN[program]


def _clean_cases() -> list[object]:
    cases = []
    for program in PROGRAMS:
        for mode in ("default", "strict"):
            key = f"{program.parent.name}/{program.name}/{mode}"
            marks = [pytest.mark.xfail(strict=True, reason="false errors when measured")] if key in FALSE_ERRORS else []
            cases.append(pytest.param(program, mode == "strict", id=key, marks=marks))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize(("program", "strict"), _clean_cases())
def test_correct_program_has_no_error(program: Path, strict: bool, cache: Path, tmp_path: Path) -> None:
    _copy_set(program, tmp_path)
    errors, out = measure.check(tmp_path, program.name, strict, cache)
    assert errors == [], out


@pytest.mark.slow
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_correct_program_runs(program: Path, tmp_path: Path) -> None:
    _copy_set(program, tmp_path)
    done = subprocess.run(
        [sys.executable, program.name], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize(("program", "line", "replacement"), _plant_cases())
def test_planted_mistake_is_caught(program: Path, line: int, replacement: str, cache: Path, tmp_path: Path) -> None:
    _copy_set(program, tmp_path)
    clean = _clean_errors(program, cache)
    (tmp_path / program.name).write_text(measure.mutate(program.read_text(), line, replacement))
    errors, out = measure.check(tmp_path, program.name, False, cache)
    assert [e for e in errors if e not in clean], f"no error for the plant on line {line}:\n{out}"
