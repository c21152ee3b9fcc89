"""How many named shapes the checker knows on the project's realistic code: ``typed-xmap check --unknowns`` on
each corpus, its closing line ``named shapes known: K of N NamedArray expressions (P%)``.

The corpora: ``examples/``, ``examples/typed/``, the blind sets' correct programs (``tests/blind/set1``,
``set2``, ``set3``: every module, the helpers included) and the docs' code (each page's ```python blocks, one file a
page, as a reader runs them; docs/errors.md, whose blocks are wrong on purpose, left out). Each corpus is one
check of its own (the blind sets both have a ``_sizes`` module).

Run it: ``.venv/bin/python tests/unknowns_coverage.py [CORPUS ...]`` prints each corpus's line, and with
``--notes`` every ``named shape unknown`` note (where a shape became unknown, and why).
tests/test_unknowns_coverage.py holds the figures as floors.

Some docs blocks show a mistake on purpose (inside ``try``: the error the reader meets). The checker reports
those lines as errors, and their results are unknown because the call is wrong; ``on_correct_code`` leaves the
expressions of a line the checker reports a named-shape error on out of the count, which changes nothing on a
corpus of correct programs (the examples and the blind sets have no such line).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
NOTE_OR_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$", re.M)
KNOWN = re.compile(r"^named shapes known: (\d+) of (\d+) NamedArray expressions \(([\d.]+)%\)$", re.M)
DELIBERATELY_WRONG = {ROOT / "docs" / "errors.md"}
CORPORA = ("examples", "examples/typed", "set1", "set2", "set3", "docs")


def docs_programs(into: Path) -> list[Path]:
    """Each docs page's python blocks, joined in order, as one file a page under ``into``."""
    written = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        blocks = BLOCK.findall(page.read_text())
        if blocks and page not in DELIBERATELY_WRONG:
            name = "_".join(page.relative_to(ROOT).with_suffix("").parts).replace("-", "_") + ".py"
            (into / name).write_text("\n".join(blocks))
            written.append(into / name)
    return written


def files(corpus: str, scratch: Path) -> list[Path]:
    """The files of ``corpus`` (the docs' written under ``scratch``)."""
    if corpus == "docs":
        return docs_programs(scratch)
    folder = ROOT / ("tests/blind/" + corpus if corpus.startswith("set") else corpus)
    return sorted(folder.glob("*.py"))


def check(corpus: str, scratch: Path, cache: Path | None = None) -> tuple[str, tuple[int, int, float]]:
    """``typed-xmap check --unknowns`` on ``corpus``: its output and (known, total, percent)."""
    paths = files(corpus, scratch)
    command = [str(Path(sys.executable).parent / "typed-xmap"), "check", "--unknowns"]
    if cache is not None:
        command += ["--cache-dir", str(cache)]
    result = subprocess.run(
        [*command, *map(str, paths)], capture_output=True, text=True, cwd=ROOT, timeout=1200, check=False
    )
    found = KNOWN.search(result.stdout)
    if found is None:
        raise RuntimeError(f"no count from the check of {corpus}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result.stdout, (int(found.group(1)), int(found.group(2)), float(found.group(3)))


def on_correct_code(output: str, known: int, total: int) -> tuple[int, int, float]:
    """(known, total, percent) without the unknowns of lines the check reports a named-shape error on."""
    found = [m.groupdict() for m in NOTE_OR_ERROR.finditer(output)]
    wrong = {(m["file"], m["line"]) for m in found if m["kind"] == "error" and "[named-" in m["text"]}
    dropped = sum(
        1
        for m in found
        if m["kind"] == "note" and "named shape unknown" in m["text"] and (m["file"], m["line"]) in wrong
    )
    total -= dropped
    return known, total, round(100.0 * known / total, 1) if total else 100.0


def main(argv: list[str]) -> None:
    notes = "--notes" in argv
    chosen = [a for a in argv if not a.startswith("--")] or list(CORPORA)
    with tempfile.TemporaryDirectory() as scratch:
        for corpus in chosen:
            output, (known, total, _) = check(corpus, Path(scratch))
            for line in output.splitlines():
                if (notes and "named shape unknown" in line) or line.startswith("named shapes known"):
                    print(f"{corpus}: {line}" if line.startswith("named shapes known") else line)
            known, total, percent = on_correct_code(output, known, total)
            print(f"{corpus}: on lines without a named-shape error: {known} of {total} ({percent}%)")


if __name__ == "__main__":
    main(sys.argv[1:])
