"""Measure a blind set: how many planted mistakes the static checker and the runtime catch.

A set is a folder of programs (``*.py``; helper modules whose name starts with ``_`` are imported by them and not
measured on their own). Each program is CORRECT as written and runs (``python prog.py`` exits 0). A line may carry
a plant, a one-line mistake written as a comment on that line:

    h = tnp.einsum(...)  # plant[p3 size static]: h = tnp.einsum(... wrong ...)

``p3`` is an id unique in the program, the second word the kind (name, size, resource, dtype, return, other), the
third whether a named-shape checker can see it from the source (``static``) or only a run can (``runtime``). The
mutant is the program with that line's code replaced by the text after the colon (indentation kept, comment gone),
written beside the program as ``<program>__plant_<id>.py``; one ``typed-xmap check`` run checks the program and all
its mutants.

For the clean program: ``typed-xmap check`` (default and ``--strict``) must report no error, and the run must
exit 0. For each mutant: caught statically when ``typed-xmap check`` reports an error in the mutated file that the
clean program does not have (``on line`` says whether one is on the planted line); caught at run time when the
run fails with a typed_xmap error (NamedShapeError / AxisResourceConflict / their subclasses in the traceback).

Usage: python measure.py SET_DIR [--no-runtime] [--json OUT]  (uses the typed-xmap next to this python)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PLANT = re.compile(r"#\s*plant\[(\w+)\s+(\w+)\s+(static|runtime)\]:\s*(.*)$")
ERROR = re.compile(r"^(?P<file>[^:\n]+\.py):(?P<line>\d+): error: (?P<msg>.*)$", re.M)
RUNTIME_ERRORS = ("NamedShapeError", "AxisResourceConflict", "UnboundAxisError", "typed_xmap")


def plants(source: str) -> list[tuple[int, str, str, str, str]]:
    """(line number, id, kind, visibility, replacement) of each plant in ``source``."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        m = PLANT.search(line)
        if m:
            found.append((number, m.group(1), m.group(2), m.group(3), m.group(4).strip()))
    return found


def mutate(source: str, number: int, replacement: str) -> str:
    lines = source.splitlines()
    original = lines[number - 1]
    indent = original[: len(original) - len(original.lstrip())]
    lines[number - 1] = indent + replacement
    return "\n".join(lines) + "\n"


def mutant_name(program: str, pid: str) -> str:
    """The file a plant's mutant is written to, beside the correct program (``kws.py`` -> ``kws__plant_k3.py``)."""
    return f"{Path(program).stem}__plant_{pid}.py"


def write_mutants(source: str, program: str, folder: Path, ids: set[str] | None = None) -> dict[str, str]:
    """Write the mutant of each plant of ``source`` (those in ``ids``, else all) into ``folder``: plant id -> file."""
    written = {}
    for number, pid, _, _, replacement in plants(source):
        if ids is None or pid in ids:
            written[pid] = mutant_name(program, pid)
            (folder / written[pid]).write_text(mutate(source, number, replacement))
    return written


def check_many(
    folder: Path, names: list[str], strict: bool, cache: Path
) -> tuple[dict[str, list[tuple[int, str]]], str]:
    """``typed-xmap check`` once over several programs of ``folder``: each program's errors as (line, message).

    One mypy run checks a correct program and all its mutants together (they import the set's helper modules,
    never each other), which costs about what one program costs; a mutant's own module name in a message is
    read as the correct program's, so its errors compare with the correct program's."""
    exe = Path(sys.executable).parent / "typed-xmap"
    args = [str(exe), "check", f"--cache-dir={cache}", "--no-error-summary", "--show-error-codes"]
    if strict:
        args.append("--strict")
    done = subprocess.run([*args, *names], check=False, cwd=folder, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    if done.returncode not in (0, 1):
        raise RuntimeError(f"typed-xmap check failed on {' '.join(names)} (exit {done.returncode}):\n{out}")
    errors: dict[str, list[tuple[int, str]]] = {name: [] for name in names}
    for m in ERROR.finditer(out):
        name = Path(m.group("file")).name
        if name in errors:
            stem = Path(name).stem
            message = re.sub(rf"\b{re.escape(stem)}\b", stem.split("__plant_")[0], m.group("msg"))
            errors[name].append((int(m.group("line")), message))
    return errors, out


def check(folder: Path, name: str, strict: bool, cache: Path) -> tuple[list[tuple[int, str]], str]:
    errors, out = check_many(folder, [name], strict, cache)
    return errors[name], out


def run(folder: Path, name: str) -> tuple[int, str]:
    try:
        done = subprocess.run(
            [sys.executable, name], check=False, cwd=folder, capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return done.returncode, done.stdout[-2000:] + done.stderr[-4000:]


def measure(set_dir: Path, runtime: bool) -> dict[str, object]:
    programs = sorted(p for p in set_dir.glob("*.py") if not p.name.startswith("_"))
    # one cache folder per set of flags: --strict changes the options every module's entry is keyed by, so one
    # folder for both would make each run rewrite the other's entries (jax's and the stubs' too) and start cold
    cache = Path(tempfile.gettempdir()) / f"blind-cache-{set_dir.resolve().name}"
    report: dict[str, object] = {"programs": {}}
    totals = {
        "static_plants": 0,
        "static_caught": 0,
        "runtime_plants": 0,
        "all_static_caught": 0,
        "all_plants": 0,
        "runtime_caught": 0,
        "clean_errors": 0,
        "clean_strict_errors": 0,
        "clean_run_failures": 0,
    }
    for program in programs:
        source = program.read_text()
        entry: dict[str, object] = {}
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for f in set_dir.iterdir():
                if f.is_file():
                    shutil.copy(f, work / f.name)
            planted = plants(source)
            mutants = write_mutants(source, program.name, work)
            found, _ = check_many(work, [program.name, *mutants.values()], False, cache / "default")
            clean = found[program.name]
            strict, _ = check(work, program.name, True, cache / "strict")
            entry["clean_errors"] = [f"{n}: {m}" for n, m in clean]
            entry["clean_strict_errors"] = [f"{n}: {m}" for n, m in strict]
            totals["clean_errors"] += len(clean)
            totals["clean_strict_errors"] += len(strict)
            if runtime:
                code, out = run(work, program.name)
                entry["clean_run"] = "ok" if code == 0 else f"FAILED ({code}): {out[-600:]}"
                totals["clean_run_failures"] += code != 0
            baseline = set(clean)
            results = []
            for number, pid, kind, visibility, _ in planted:
                new = [e for e in found[mutants[pid]] if e not in baseline]
                static = bool(new)
                on_line = any(n == number for n, _ in new)
                rt = None
                if runtime:
                    code, out = run(work, mutants[pid])
                    rt = code != 0 and any(word in out for word in RUNTIME_ERRORS)
                    totals["runtime_caught"] += bool(rt)
                totals["all_plants"] += 1
                totals["all_static_caught"] += static
                if visibility == "static":
                    totals["static_plants"] += 1
                    totals["static_caught"] += static
                else:
                    totals["runtime_plants"] += 1
                results.append(
                    {
                        "id": pid,
                        "line": number,
                        "kind": kind,
                        "visibility": visibility,
                        "static": static,
                        "on_line": on_line,
                        "runtime": rt,
                        "errors": [f"{n}: {m}" for n, m in new][:3],
                    }
                )
            entry["plants"] = results
        report["programs"][program.name] = entry  # type: ignore[index]
    report["totals"] = totals
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("--no-runtime", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = measure(args.set_dir, not args.no_runtime)
    for name, entry in report["programs"].items():  # type: ignore[union-attr]
        print(
            f"== {name}: clean errors {len(entry['clean_errors'])}, strict {len(entry['clean_strict_errors'])}"
            f"{', run ' + entry['clean_run'][:200] if 'clean_run' in entry else ''}"
        )
        for e in entry["clean_errors"] + entry["clean_strict_errors"]:
            print(f"   clean: {e}")
        for p in entry["plants"]:
            mark = "CAUGHT" if p["static"] else "missed"
            print(
                f"   {p['id']:>4} {p['kind']:<8} {p['visibility']:<7} static={mark:<6} "
                f"on_line={p['on_line']!s:<5} runtime={p['runtime']}  {'; '.join(p['errors'])[:160]}"
            )
    t = report["totals"]
    print(
        f"TOTAL static-visible plants caught statically: {t['static_caught']} of {t['static_plants']}; "  # type: ignore[index]
        f"all plants caught statically: {t['all_static_caught']} of {t['all_plants']}; "
        f"runtime caught: {t['runtime_caught']} of {t['all_plants']}; "
        f"clean-program errors: default {t['clean_errors']}, strict {t['clean_strict_errors']}; "
        f"clean runs failed: {t['clean_run_failures']}"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
