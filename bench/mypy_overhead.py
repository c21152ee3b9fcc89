"""mypy with the typed_xmap plugin against mypy without it, on a generated 2,000-line annotated file.

Both runs use the same stubs (``stubs/``), so the ratio is the plugin's marginal cost. Cold: empty cache
(typeshed and the stubs included). Re-check: the file edited, everything else cached. Runs are
interleaved (without, with, without, ...) and the median of each is reported. Then ``typed-xmap check``
against ``mypy`` with the plugin, cold, interleaved too (the command's own cost: start-up and exit).

    python bench/mypy_overhead.py          # or: typed-xmap bench mypy_overhead
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = 222  # 9 lines each: ~2,000 lines
REPEATS = 5
GOAL_COLD = 1.1  # DESIGN.md: mypy with the plugin vs without, cold
GOAL_CHECK = 1.05


def generate(functions: int = FUNCTIONS, salt: int = 0) -> str:
    lines = [
        "import typed_xmap.numpy as tnp",
        "from typed_xmap import NamedArray, f32",
        "",
    ]
    for i in range(functions):
        lines += [
            f'def layer_{i}(x: NamedArray[f32, "batch=32 in_features"], w: NamedArray[f32, "in_features out"],',
            '            b: NamedArray[f32, "out"]) -> NamedArray[f32, "batch out"]:',
            f"    h = x * w + {salt}.5",
            "    s = tnp.add(h, b)",
            '    t = tnp.sum(s * 2.0, "in_features")',
            '    u = tnp.einsum("{in_features},{in_features,out}->{out}", x, w)',
            "    return t + u",
            "",
            "",
        ]
    return "\n".join(lines)


def _mypy(workdir: Path, config: Path, cache: Path) -> float:
    return _timed(
        workdir, [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache), "--strict"]
    )


def _typed_xmap_check(workdir: Path, cache: Path) -> float:
    command = Path(sys.executable).with_name("typed-xmap")
    return _timed(workdir, [str(command), "check", "program.py", "--cache-dir", str(cache), "--strict"], path=False)


def _timed(workdir: Path, command: list[str], *, path: bool = True) -> float:
    # As on a user's machine, Python caches the plugin's compiled modules (mypy itself is compiled with mypyc):
    # without this a PYTHONDONTWRITEBYTECODE environment times compiling the plugin's source on every run.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    result = subprocess.run(
        [*command, "program.py"] if path else command,
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"mypy failed:\n{result.stdout}{result.stderr}")
    return elapsed


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="typed-xmap-mypy-bench-") as tmp:
        workdir = Path(tmp)
        program = workdir / "program.py"
        program.write_text(generate())
        lines = program.read_text().count("\n")
        configs = {}
        for plugin in (False, True):
            config = workdir / f"{'with' if plugin else 'without'}.ini"
            config.write_text(
                "[mypy]\n" + ("plugins = typed_xmap.plugin\n" if plugin else "") + f"mypy_path = {ROOT / 'stubs'}\n"
            )
            configs[plugin] = config
        cold: dict[bool, list[float]] = {False: [], True: []}
        recheck: dict[bool, list[float]] = {False: [], True: []}
        for repeat in range(REPEATS):
            for plugin in (False, True):
                cache = workdir / f"cache-{plugin}"
                shutil.rmtree(cache, ignore_errors=True)
                program.write_text(generate(salt=0))
                cold[plugin].append(_mypy(workdir, configs[plugin], cache))
                program.write_text(generate(salt=repeat + 1))  # an edit: only this file is re-checked
                recheck[plugin].append(_mypy(workdir, configs[plugin], cache))
        print(
            f"mypy overhead of the typed_xmap plugin on a {lines}-line annotated file "
            f"(median of {REPEATS}, interleaved, same stubs)"
        )
        ratios = {}
        for label, runs in (("cold", cold), ("re-check", recheck)):
            without, with_plugin = statistics.median(runs[False]), statistics.median(runs[True])
            ratios[label] = with_plugin / without
            print(f"  {label:9} without {without:6.2f} s   with {with_plugin:6.2f} s   ratio {ratios[label]:.2f}x")
        verdict = "meets" if ratios["cold"] <= GOAL_COLD else "misses"
        print(f"  cold ratio {ratios['cold']:.2f}x {verdict} the goal of <= {GOAL_COLD}x")
        command: dict[bool, list[float]] = {False: [], True: []}
        program.write_text(generate(salt=0))
        for _ in range(REPEATS):
            for check in (False, True):
                cache = workdir / f"cache-check-{check}"
                shutil.rmtree(cache, ignore_errors=True)
                run = _typed_xmap_check(workdir, cache) if check else _mypy(workdir, configs[True], cache)
                command[check].append(run)
        mypy_run, check_run = statistics.median(command[False]), statistics.median(command[True])
        ratio = check_run / mypy_run
        verdict = "meets" if ratio <= GOAL_CHECK else "misses"
        print(
            f"  typed-xmap check {check_run:6.2f} s   mypy with the plugin {mypy_run:6.2f} s   "
            f"ratio {ratio:.2f}x {verdict} the goal of <= {GOAL_CHECK}x (cold)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
