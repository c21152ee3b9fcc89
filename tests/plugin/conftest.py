"""pytest-mypy-plugins cases run in-process (fast), with the plugin and the stubs from this checkout."""

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest_mypy_plugins.utils

ROOT = Path(__file__).resolve().parents[2]

# In same-process mode pytest-mypy-plugins restores sys.modules after each case, so a module a case imported
# first (numpy, jax's dependencies, hypothesis' lazy imports) is half-forgotten and cannot be imported again
# by later tests. mypy itself never imports the checked code, so there is nothing to restore: keep modules.
pytest_mypy_plugins.utils.temp_sys_modules = contextlib.nullcontext


# A hook that fails must fail its case, not degrade quietly to "no inference" (the plugin's guard re-raises).
os.environ["TYPED_XMAP_PLUGIN_DEBUG"] = "1"


def pytest_configure(config):
    folder = (
        config.cache.mkdir("typed_xmap_plugin")
        if getattr(config, "cache", None)
        else tempfile.mkdtemp(prefix="typed_xmap_plugin")
    )
    ini = Path(folder) / "mypy.ini"
    ini.write_text(
        f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\nstrict = True\nshow_error_codes = True\n"
    )
    if not config.option.mypy_ini_file and not config.option.mypy_pyproject_toml_file:
        config.option.mypy_ini_file = str(ini)
    config.option.mypy_same_process = True
    if config.option.mypy_testing_base == tempfile.gettempdir():
        # pytest-mypy-plugins keeps its mypy cache under this folder (``.mypy_cache/<xdist worker>``): left at the
        # shared temp folder, every run on the machine (another checkout's stubs, another branch's plugin) would
        # rewrite the entries this run reads, and each case would check jax and the stubs cold again
        config.option.mypy_testing_base = tempfile.mkdtemp(prefix="typed_xmap_yml")
        config.add_cleanup(lambda: shutil.rmtree(config.option.mypy_testing_base, ignore_errors=True))
    # pytest-mypy-plugins looks mypy up on PATH even in same-process mode
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


def pytest_collection_modifyitems(items):
    """A case with a ``mypy_config`` of its own gets a cache folder for that config. mypy keys every module's
    cache entry by the options that affect it (``disable_error_code``, ``allow_redefinition``...), so a case
    with other options made the shared folder stale for jax, the stubs and every module they import: that case
    and the next plain one each checked all of them again from source (millions of objects for the collector
    each time). Cases with the same config share its folder."""
    for item in items:
        extra = getattr(item, "additional_mypy_config", "")
        if extra and hasattr(item, "incremental_cache_dir"):
            key = hashlib.sha256(extra.encode()).hexdigest()[:12]
            item.incremental_cache_dir = os.path.join(item.incremental_cache_dir, f"config-{key}")
