"""A ``*rest`` group goes through every operation: inside a function whose signature declares the group
(``x: NamedArray[f32, "*rest height width chan"]``), every operation of the table of operations
(``_algebra/_operations.py``) and the ``tx`` functions with sizes keep the group and the axes they name, as at run
time, where the group stands for the caller's other axes.

One mypy run checks every operation (the calls of tests/test_plugin_names_first.py, their arguments literal), each
three times: on ``x`` with a ``batch`` axis; on ``x`` with the group ``*rest`` in its place, whose result must have
the same axis names, ``*rest`` for ``batch``; and, where the call names ``height``, on the grouped ``x`` with the call
naming ``depth`` instead, an axis ``x`` does not show but its group may hold: never an error there (the result's
named shape is unknown, or known where the group's axes do not matter).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mypy import api
from test_plugin_names_first import HEADER, MARK, TX_CALLS, _names, calls_of

from typed_xmap._algebra import TNP_OPERATIONS

ROOT = Path(__file__).resolve().parents[1]
PLAIN = 'x: NamedArray[f32, "batch=2 height=8 width=8 chan=3"]'
GROUPED = 'x: NamedArray[f32, "*rest height=8 width=8 chan=3"]'
PARAMETERS = (
    "cfg: Config, key: jax.Array, {x}, "
    'kernel: NamedArray[f32, "kh=3 kw=3 chan=3 out=4"], t: NamedArray[i32, "tb=2 seq=5"]'
)
UNKNOWN_WITH_GROUP = {'tx.broadcast_to(x, {"batch"': "the target lists the axes the group stands for"}
"""Calls whose result is rightly unknown on a grouped ``x`` (and why): the call names the group's own axes."""


def _program(calls: list[str]) -> tuple[str, list[tuple[int, str, str]]]:
    """A program with one function per call and variant; its cases: (first line of the function, variant, call)."""
    program, cases = HEADER, []
    for call in calls:
        variants = [("plain", PLAIN, call), ("grouped", GROUPED, call)]
        if '"height"' in call:
            variants.append(("hidden", GROUPED, call.replace('"height"', '"depth"')))
        for n, (how, x, written) in enumerate(variants):
            cases.append((program.count("\n") + 1, how, written))
            program += f"def f{len(cases)}_{n}({PARAMETERS.format(x=x)}) -> None:\n    reveal_type({written})\n\n"
    return program, cases


def _check(tmp_path: Path, cache: Path, program: str) -> list[str]:
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    (tmp_path / "program.py").write_text(program)
    os.environ["TYPED_XMAP_PLUGIN_DEBUG"] = "1"
    try:
        config = str(tmp_path / "mypy.ini")
        out, err, _ = api.run(["--config-file", config, "--cache-dir", str(cache), str(tmp_path / "program.py")])
    finally:
        del os.environ["TYPED_XMAP_PLUGIN_DEBUG"]
    assert "Traceback" not in out + err, out + err
    return out.splitlines()


def test_every_operation_keeps_a_group_and_the_axes_it_names(tmp_path, mypy_cache):
    calls = [MARK.sub(lambda m: m.group(1), call) for name in TNP_OPERATIONS for call in calls_of(name)]
    calls += [MARK.sub(lambda m: m.group(1), call) for call in TX_CALLS]
    program, cases = _program(calls)
    lines = _check(tmp_path, mypy_cache / "plugin-ini", program)
    reveals, errors = {}, {}
    for line in lines:
        hit = re.match(r".*program\.py:(\d+): (note|error): (.*)$", line)
        if hit and hit.group(2) == "note" and hit.group(3).startswith("Revealed type is"):
            reveals[int(hit.group(1))] = hit.group(3).removeprefix("Revealed type is ").strip('"')
        elif hit and hit.group(2) == "error":
            errors.setdefault(int(hit.group(1)), []).append(hit.group(3))
    failures, plain = [], None
    for first, how, call in cases:
        revealed = reveals.get(first + 1, "?")
        wrong = errors.get(first + 1)
        if how == "plain":
            plain = _names(revealed)
            if plain is None or wrong:
                failures.append(f"{call}: the call on a value without a group is not known ({revealed}; {wrong})")
        elif wrong:
            failures.append(f"{call} ({how}): an error where the group may hold the axis: {wrong}")
        elif how == "grouped" and plain is not None:
            expected = [frozenset("*rest" if n == "batch" else n for n in names) for names in plain]
            if any(call.startswith(prefix) for prefix in UNKNOWN_WITH_GROUP):
                expected = None
            if _names(revealed) != expected:
                failures.append(f"{call} (grouped): {revealed}, expected the names {expected}")
    assert not failures, "\n".join(failures)
