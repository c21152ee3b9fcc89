"""What ``typed-xmap check`` does beyond mypy with the plugin: it imports neither jax nor the runtime (the plugin
and the algebra only), and it writes mypy's fine-grained dependencies (what the language server's daemon starts
from; they cost a cold check about 15% more) only where asked for (``--cache-fine-grained``: the server's cache
writer) or into a cache that holds them already, which it keeps up to date."""

import subprocess
import sys
from pathlib import Path

import pytest
from mypy.build import DEPS_META_FILE, create_metastore
from mypy.options import Options

from typed_xmap._tools._check import holds_fine_grained, with_plugin

PROGRAM = """import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def total(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x, "embed")
"""

# the command as the console script runs it, then what it imported: jax's packages, numpy, the runtime's layers
PROBE = """
import sys
from typed_xmap._tools._cli import main
status = main(sys.argv[1:])
runtime = ("typed_xmap._value", "typed_xmap._ops", "typed_xmap._checking", "typed_xmap._xmap", "typed_xmap.numpy")
print("IMPORTED", sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("jax", "jaxlib", "numpy", "rich") or name.startswith(runtime)
))
sys.exit(status)
"""


def _options(cache: Path) -> Options:
    options = Options()
    options.cache_dir = str(cache)
    return options


def _deps_written(cache: Path) -> float | None:
    """When mypy last wrote its fine-grained dependencies' record into ``cache``; None when it holds none."""
    if not holds_fine_grained(_options(cache)):
        return None
    store = create_metastore(_options(cache), parallel_worker=False)
    try:
        return store.getmtime(DEPS_META_FILE)
    finally:
        store.close()


def test_fine_grained_dependencies_are_kept_where_the_cache_holds_them(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert not holds_fine_grained(_options(missing))
    assert not missing.exists(), "asking made a cache"
    assert not with_plugin(_options(missing)).cache_fine_grained
    asked = _options(missing)
    asked.cache_fine_grained = True  # mypy's --cache-fine-grained
    assert with_plugin(asked).cache_fine_grained
    plain, server = tmp_path / "plain", tmp_path / "server"
    for cache, entry in ((plain, "prog.meta.ff"), (server, DEPS_META_FILE)):
        store = create_metastore(_options(cache), parallel_worker=False)
        assert store.write(entry, b"{}")
        store.commit()
        store.close()
    assert not holds_fine_grained(_options(plain))
    assert not with_plugin(_options(plain)).cache_fine_grained
    assert holds_fine_grained(_options(server))
    assert with_plugin(_options(server)).cache_fine_grained


@pytest.mark.slow
def test_a_check_imports_no_jax_and_writes_fine_grained_dependencies_where_asked(tmp_path: Path) -> None:
    program, cache = tmp_path / "prog.py", tmp_path / "cache"
    program.write_text(PROGRAM)

    def check(*flags: str) -> str:
        command = [sys.executable, "-c", PROBE, "check", "prog.py", "--cache-dir", str(cache), *flags]
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "IMPORTED []" in check("--strict")
    assert cache.is_dir() and _deps_written(cache) is None  # a plain check: mypy's cache, no dependencies
    check("--strict", "--cache-fine-grained")  # the language server's cache writer
    first = _deps_written(cache)
    assert first is not None
    program.write_text(PROGRAM + "\n# edited\n")
    assert "IMPORTED []" in check("--strict")  # a plain check again, of the edited file
    written = _deps_written(cache)
    assert written is not None and written > first, "the cache's dependencies were left stale"
