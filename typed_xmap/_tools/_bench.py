"""``typed-xmap bench``: run the benchmark scripts of the repository's ``bench/`` folder."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from ._summary import summary_lines

NO_BENCH_FOLDER = (
    "typed-xmap bench: the benchmarks are the scripts of the bench/ folder of typed_xmap's sources, which an "
    "installed wheel does not carry, and there is no bench/ under the current directory. Fix: run "
    "`typed-xmap bench` from the root of a clone or of the unpacked sdist (typed_xmap-VERSION.tar.gz holds bench/)"
)


def bench_folder() -> Path | None:
    """``bench/`` beside the package (an editable install or a clone), else under the working directory."""
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (root / "bench").is_dir():
            return root / "bench"
    return None


def run_benchmarks(names: list[str]) -> int:
    folder = bench_folder()
    if folder is None:
        print(NO_BENCH_FOLDER, file=sys.stderr)
        return 1
    scripts = sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))
    if names:
        unknown = set(names) - {p.stem for p in scripts}
        if unknown:
            print(f"typed-xmap bench: unknown benchmarks {sorted(unknown)}; known: {[p.stem for p in scripts]}")
            return 2
        scripts = [p for p in scripts if p.stem in names]
    status = 0
    for script in scripts:
        print(f"== bench/{script.name}", flush=True)
        spec = importlib.util.spec_from_file_location(f"typed_xmap_bench_{script.stem}", script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        status = max(status, int(module.main() or 0))
    for line in summary_lines():  # the model families' ratios, as the scripts above recorded them
        print(line)
    return status
