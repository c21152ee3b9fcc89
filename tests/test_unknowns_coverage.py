"""No silent unknowns, held as floors: on the project's realistic code (the examples, the blind sets' correct
programs, the docs' code) ``typed-xmap check --unknowns`` knows at least the share of named shapes measured
when the mechanisms behind it were built (tests/unknowns_coverage.py measures them). A change that loses names
somewhere (an operation whose names no longer survive a non-literal argument, a flow no longer followed) fails
here, with the notes of where the shapes became unknown.

What stays unknown is honest, each with its cause in the notes. In the docs: names read from strings at run
time (orbax; and a dict literal of two shapes, whose value type is their join), a bare ``NamedArray`` and a
``T`` bound to ``tx.Shaped`` on purpose (the gradual typing page), errors shown on purpose inside ``try``, the
arguments of untyped functions (the optax and equinox pages); examples/typed/gradual.py's ``Any`` on purpose.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from unknowns_coverage import check

FLOORS = {"examples": 100.0, "examples/typed": 100.0, "set1": 100.0, "set2": 100.0, "set3": 100.0, "docs": 97.5}
"""The percentage known each corpus had when measured (rounded down): it may only grow."""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the corpora (the library's stubs and jax's are checked once)."""
    return tmp_path_factory.mktemp("unknowns-cache")


@pytest.mark.slow
@pytest.mark.parametrize("corpus", sorted(FLOORS))
def test_named_shapes_known_stay_at_their_floor(corpus: str, cache: Path, tmp_path: Path) -> None:
    output, (known, total, percent) = check(corpus, tmp_path, cache)
    assert total > 100, output  # the corpus was found and checked
    notes = "\n".join(line for line in output.splitlines() if "named shape unknown" in line)
    assert percent >= FLOORS[corpus], f"{corpus}: {known} of {total} known ({percent}%)\n{notes}"
