"""Reading collectives on an 8-device (data=4, model=2) mesh: those a compiled HLO holds, and those
``typed-xmap check --comm`` lists per function, both as a Counter of (kind, mesh axes). Shared by
tests/test_comm_hlo.py and tests/blind/comm_measure.py."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MESH = {"data": 4, "model": 2}
COLLECTIVE = re.compile(r"\b(all-reduce|reduce-scatter|all-gather|all-to-all|collective-permute)(?:-start)?\(")

Listed = Counter[tuple[str, tuple[str, ...]]]
MOVES = frozenset({"all-gather", "all-to-all", "collective-permute"})
"""What a listed ``reshard`` may compile to."""
COMBINABLE = frozenset({"all-reduce", "all-gather", "reduce-scatter"})
"""The kinds XLA's combiners pack into one op of several values (an all-to-all's tuple form holds the blocks of
one value)."""


def _permuted_axes(line: str) -> tuple[str, ...] | None:
    """The mesh axes a ``collective-permute``'s device pairs move along (device ids are row-major over MESH)."""
    found = re.search(r"source_target_pairs=\{(\{[^=]*\})\}", line)
    if found is None:
        return None
    sizes = list(MESH.values())

    def coordinates(device: int) -> list[int]:
        return [device // math.prod(sizes[i + 1 :]) % size for i, size in enumerate(sizes)]

    moved = set()
    for source, target in re.findall(r"\{(\d+),(\d+)\}", found[1]):
        pairs = zip(coordinates(int(source)), coordinates(int(target)), strict=True)
        moved |= {axis for axis, (a, b) in zip(MESH, pairs, strict=True) if a != b}
    return tuple(axis for axis in MESH if axis in moved)


def _group_size(line: str) -> int:
    """How many devices each replica group of an HLO collective holds, in the forms XLA prints."""
    if found := re.search(r"replica_groups=mesh\[([^\]]*)\][^{]*\{([^}]*)\}", line):
        sizes = {axis: int(size) for axis, size in re.findall(r"'(\w+)'=(\d+)", found[1])}
        return math.prod(sizes[axis] for axis in re.findall(r"'(\w+)'", found[2]))
    if found := re.search(r"replica_groups=\{\{([^}]*)\}", line):
        return len(found[1].split(","))
    if found := re.search(r"replica_groups=\[\d+,(\d+)\]<=", line):
        return int(found[1])
    raise AssertionError(f"replica groups in a form this test does not read: {line}")


def _mesh_axes(size: int) -> tuple[str, ...]:
    """The mesh axes whose devices make a group of ``size`` (the mesh's axes have distinct sizes)."""
    by_size = {math.prod(MESH[a] for a in axes): axes for axes in (("data",), ("model",), ("data", "model"))}
    return by_size[size]


def compiled(function: object, *args: object, combined: bool = True) -> Listed:
    """The collectives of ``function`` compiled for ``args``, each op once (as a profile shows them);
    ``combined=False``: the values its all-reduces, all-gathers and reduce-scatters carry, each once. XLA
    merges no two collectives (each has its own channel), and its combiners pack independent ones over the same
    devices into one op of several operands (a tuple all-reduce): each operand counts as one, as before they
    were packed, and a value a function reduces twice over the same devices (``tnp.mean(x, "embed")`` next to
    ``tnp.var(x, "embed")``: the repeat packed with another sum) counts once, as ``--comm`` lists it once."""
    hlo = function.lower(*args).compile().as_text()  # type: ignore[attr-defined]
    found: Listed = Counter()
    carried: set[tuple[str, tuple[str, ...], str]] = set()
    for line in hlo.splitlines():
        if match := COLLECTIVE.search(line):
            kind, axes = match[1], _permuted_axes(line) or _mesh_axes(_group_size(line))
            operands = re.findall(r"%[\w.-]+", line[match.end() :].split(")", 1)[0])
            if combined or kind not in COMBINABLE or not operands:
                found[kind, axes] += 1
                continue
            for operand in operands:
                if (kind, axes, operand) not in carried:
                    carried.add((kind, axes, operand))
                    found[kind, axes] += 1
    return found


def listed(program: Path) -> dict[str, Listed]:
    """The plugin's list, per function: ``typed-xmap check --comm``'s notes under "In function" lines (the
    program must check clean)."""
    found, errors = listing(program)
    assert not errors, "\n".join(errors)
    return found


def listing(program: Path) -> tuple[dict[str, Listed], list[str]]:
    """``typed-xmap check --comm`` on ``program``: the collectives it lists per function, and its error lines."""
    command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--comm", str(program.resolve())]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error: " in line]
    assert result.returncode == 0 or errors, result.stdout + result.stderr
    found: dict[str, Listed] = {}
    function = ""
    for line in result.stdout.splitlines():
        if context := re.search(r'note: In function "(\w+)"', line):
            function = context[1]
        elif note := re.search(r":\d+: note: collective: ([\w-]+) over (\w+|\([\w,]+\)):", line):
            axes = tuple(note[2].strip("()").split(","))
            found.setdefault(function, Counter())[note[1], axes] += 1
    return found, errors


def matched(static: Listed, hlo: Listed) -> tuple[Listed, Listed]:
    """``static`` and ``hlo`` with each listed ``reshard`` over some mesh axes taken out of both, together with
    the block-moving collectives over those axes, or over some of them, it stands for (XLA chooses how to move
    the blocks: a swap of data and model is an all-to-all over data and a collective-permute over both)."""
    static, hlo = Counter(static), Counter(hlo)
    for kind, axes in list(static):
        if kind != "reshard":
            continue
        moves = [key for key in hlo if key[0] in MOVES and set(key[1]) <= set(axes)]
        if moves:
            del static[kind, axes]
            for key in moves:
                del hlo[key]
    return static, hlo
