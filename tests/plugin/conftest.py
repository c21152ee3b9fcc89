"""pytest-mypy-plugins cases run in-process (fast), with the plugin and the stubs from this checkout."""

import contextlib
import os
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
    # pytest-mypy-plugins looks mypy up on PATH even in same-process mode
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
