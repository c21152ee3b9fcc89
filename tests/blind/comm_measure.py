"""Measure a blind communication set: per jitted function, do the collectives ``typed-xmap check --comm`` lists
equal those XLA compiles, on an 8-device mesh (data=4, model=2)?

A set is a folder of programs (``*.py``; names starting with ``_`` are skipped), each CLEAN, with
``MESH = {"data": 4, "model": 2}`` and ``example_arguments()``: called inside ``jax.set_mesh(mesh)``, it maps each
function to jit alone to its positional arguments. A function's compiled HLO holds its callees' collectives, so
its expected list is what ``--comm`` lists in it plus, transitively, in the module's functions it calls by name.
A listed ``reshard`` stands for whichever block-moving collectives XLA picks over its mesh axes
(``hlo_collectives.matched``). XLA's combiners pack independent collectives over the same devices into one
(a tuple all-reduce) and merge no two: each value an all-reduce, all-gather or reduce-scatter carries counts once,
as ``--comm`` lists them (``hlo_collectives.compiled(combined=False)``).
Each function is compiled on an Explicit mesh and on an Auto one.

Usage: python comm_measure.py SET_DIR [--json OUT]   (prints a line per function, then the totals)
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from collections import Counter
from pathlib import Path

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
from example_programs import load
from hlo_collectives import MESH, Listed, compiled, listing, matched
from jax.sharding import AxisType


def callees(source: str) -> dict[str, set[str]]:
    """Each module-level function -> the module's functions it calls or names, transitively; a module-level
    name bound to an expression of functions (``per_example = tx.vmap(f, ...)``) counts as calling them."""
    tree = ast.parse(source)
    bodies: dict[str, ast.AST] = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            bodies.update({target.id: node.value for target in node.targets if isinstance(target, ast.Name)})
    direct = {
        name: {ref.id for ref in ast.walk(body) if isinstance(ref, ast.Name) and ref.id in bodies} - {name}
        for name, body in bodies.items()
    }
    closure: dict[str, set[str]] = {}
    for name in direct:
        seen: set[str] = set()
        todo = [name]
        while todo:
            for callee in direct[todo.pop()] - seen - {name}:
                seen.add(callee)
                todo.append(callee)
        closure[name] = seen
    return closure


def _text(found: Listed) -> str:
    return ", ".join(f"{kind}/{'+'.join(axes)} x{n}" for (kind, axes), n in sorted(found.items())) or "none"


def measure(program: Path, axis_types: tuple[AxisType, ...] = (AxisType.Explicit, AxisType.Auto)) -> dict[str, object]:
    """The checker's errors on ``program`` and, per function to jit and mesh axis type, whether the listed
    collectives equal the compiled ones (with both lists)."""
    static, errors = listing(program)
    closure = callees(program.read_text())
    module = load(program, f"comm_blind_{program.stem}")
    rows = {}
    for axis_type in axis_types:
        mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
        with jax.set_mesh(mesh):
            for name, args in module.example_arguments().items():
                expected = sum((static.get(f, Counter()) for f in {name} | closure.get(name, set())), Counter())
                try:
                    hlo = compiled(jax.jit(getattr(module, name)), *args, combined=False)
                except Exception as error:  # a program that does not compile on this mesh type is reported
                    rows.setdefault(name, {})[axis_type.name] = {"error": f"{type(error).__name__}: {error}"[:300]}
                    continue
                left_static, left_hlo = matched(expected, hlo)
                rows.setdefault(name, {})[axis_type.name] = {
                    "agree": left_static == left_hlo,
                    "static": _text(expected),
                    "hlo": _text(hlo),
                }
    return {"errors": errors, "functions": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    results = {p.name: measure(p) for p in sorted(options.set_dir.glob("*.py")) if not p.name.startswith("_")}
    totals = {"Explicit": [0, 0], "Auto": [0, 0]}
    for program, result in results.items():
        for error in result["errors"]:  # type: ignore[attr-defined]
            print(f"{program}: checker error: {error}")
        for name, by_type in result["functions"].items():  # type: ignore[attr-defined]
            for axis_type, row in by_type.items():
                totals[axis_type][1] += 1
                totals[axis_type][0] += bool(row.get("agree"))
                verdict = "agree" if row.get("agree") else ("ERROR " + row["error"] if "error" in row else "DIFFER")
                detail = "" if "error" in row else f"  static: {row['static']}  |  hlo: {row['hlo']}"
                print(f"{program}::{name} [{axis_type}] {verdict}{detail}")
    errors = sum(len(r["errors"]) for r in results.values())  # type: ignore[arg-type]
    for axis_type, (agree, total) in totals.items():
        print(f"TOTAL {axis_type}: functions whose listed collectives equal the compiled HLO's: {agree} of {total}")
    print(f"TOTAL checker errors on the (clean) programs: {errors}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
