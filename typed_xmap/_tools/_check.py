"""``typed-xmap check PATHS...``: mypy with the typed_xmap plugin on, honouring the user's own mypy config.

mypy reads its config as usual (``mypy.ini``, ``.mypy.ini``, ``pyproject.toml``, ``setup.cfg``, or
``--config-file``); the plugin is added to the options when that config does not load it already, and
the stubs go first on mypy's module search path: this checkout's ``stubs/`` (an editable install), or a link to
the installed ``typed_xmap-stubs`` (a wheel). mypy looks in the current folder before stub packages, so without
that a check run inside a clone would read the clone's ``typed_xmap/`` sources instead of the stubs. Unless
the config chooses a redefinition mode, mypy's ``--allow-redefinition`` is on (rebinding a variable to a new
shape is ordinary model code). mypy's own flags pass through ``extra_args``. mypy's fine-grained dependencies
(what the language server's daemon starts from) are written with ``--cache-fine-grained`` or into a cache that
holds them already, not into others: they cost a cold check about 15% more.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy.options import Options

__all__ = [
    "COMM_FLAGS",
    "CONFIG",
    "PLUGIN",
    "config_ini",
    "config_toml",
    "holds_fine_grained",
    "run_check",
    "with_plugin",
]

PLUGIN = "typed_xmap.plugin"

CONFIG: dict[str, str | bool] = {"plugins": PLUGIN, "allow_redefinition": True}
"""The one mypy config: what ``typed-xmap check`` adds to the user's own (where it does not choose), and what
the README and docs/typing show for plain mypy (tests/test_packaging.py holds them to ``config_toml``)."""


def config_toml() -> str:
    """``CONFIG`` as ``pyproject.toml``'s ``[tool.mypy]`` table."""
    lines = [f"{key} = {_toml(key, value)}" for key, value in CONFIG.items()]
    return "\n".join(["[tool.mypy]", *lines]) + "\n"


def config_ini() -> str:
    """``CONFIG`` as ``mypy.ini``'s ``[mypy]`` section."""
    return "\n".join(["[mypy]", *(f"{key} = {value}" for key, value in CONFIG.items())]) + "\n"


def _toml(key: str, value: str | bool) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f'["{value}"]' if key == "plugins" else f'"{value}"'


def _stubs_dir(cache_dir: str) -> Path | None:
    """A folder whose ``typed_xmap/`` is the stubs, for mypy's search path: the checkout's ``stubs/`` next to the
    package (editable installs), else one under mypy's ``cache_dir`` linking to the installed ``typed_xmap-stubs``
    (a copy where links cannot be made); None when neither is there."""
    candidate = Path(__file__).resolve().parents[2] / "stubs"
    if (candidate / "typed_xmap" / "__init__.pyi").exists():
        return candidate
    installed = next((p for p in map(Path, sys.path) if (p / "typed_xmap-stubs" / "__init__.pyi").exists()), None)
    if installed is None:
        return None
    folder = Path(_user_temp("typed-xmap-stubs") if cache_dir == os.devnull else cache_dir)
    folder = folder.resolve() / "typed_xmap-stubs-link"
    link, target = folder / "typed_xmap", (installed / "typed_xmap-stubs").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and link.resolve() != target:  # the stubs of an earlier install
        link.unlink()
    if not link.exists():
        try:
            link.symlink_to(target, target_is_directory=True)
        except FileExistsError:  # a check running beside this one made it
            pass
        except OSError:  # no links here (Windows without the privilege): a copy, refreshed on every run
            shutil.copytree(target, link)
    elif not link.is_symlink():
        shutil.copytree(target, link, dirs_exist_ok=True)
    return folder


def _user_temp(name: str) -> Path:
    """A folder of this user's under the temp directory, the same for every run: a fresh one per run was never
    removed (a check ends with ``os._exit``), so each left an empty folder behind."""
    folder = Path(tempfile.gettempdir()) / f"{name}-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _empty_config() -> Path:
    """An empty ``mypy.ini`` for runs without a config file, written once (atomically: checks may run side by
    side)."""
    path = _user_temp("typed-xmap-check") / "mypy.ini"
    if not path.exists():
        partial = path.with_name(f"mypy.ini.{os.getpid()}")
        partial.write_text("[mypy]\n")
        os.replace(partial, path)
    return path


COMM_FLAGS = ["--enable-error-code", "named-comm", "--show-error-context"]
"""``typed-xmap check --comm``: the plugin's notes of the collectives placement forces, under their functions."""


def run_check(paths: list[str], extra_args: list[str], *, fast_exit: bool = False, unknowns: bool = False) -> int:
    """Run mypy on ``paths`` with the plugin; returns mypy's exit status (0 clean, 1 errors, 2 failure).

    With ``fast_exit`` (the ``typed-xmap check`` command sets it) the process ends right
    after the report is flushed, as ``mypy`` itself does (``os._exit``): tearing down mypy's build state
    takes seconds, as long as a cold check of a small project, and nothing needs it.
    """
    status = _run_check(paths, extra_args, unknowns=unknowns)
    if fast_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def with_plugin(options: Options) -> Options:
    """``options`` (mypy's, read from the user's config) with the plugin, the stubs and redefinition on, and
    mypy's fine-grained dependencies kept in a cache that holds them (``holds_fine_grained``).

    ``typed-xmap check`` and the language server's mypy daemon (typed_xmap/_tools/_lsp/) both check this way.
    """
    if not any(p == PLUGIN or p.replace("\\", "/").endswith("typed_xmap/plugin") for p in options.plugins):
        options.plugins.append(PLUGIN)
    if not options.config_file:  # mypy loads plugins only when it read a config file: give it an empty one
        options.config_file = str(_empty_config())
    if not options.allow_redefinition and not options.allow_redefinition_old:
        # model code rebinds a name to a new shape (h = relu(x); h = einsum(..., h, w)): mypy's
        # --allow-redefinition (measured: also in loops, and bugs through the rebound value or an
        # accumulator are still reported; --allow-redefinition-old gives false errors in loops)
        options.allow_redefinition = bool(CONFIG["allow_redefinition"])
    # mypy's fine-grained dependencies beside its cache (what the language server's daemon starts from,
    # ``dmypy --use-fine-grained-cache``) cost a cold check ~15% more: written where asked for
    # (``--cache-fine-grained``: the server's cache writer; its daemon) and kept up to date where the cache holds them
    options.cache_fine_grained = (
        options.cache_fine_grained or options.use_fine_grained_cache or holds_fine_grained(options)
    )
    stubs = _stubs_dir(options.cache_dir)
    if stubs is not None and str(stubs) not in options.mypy_path:
        options.mypy_path.insert(0, str(stubs))
    return options


def holds_fine_grained(options: Options) -> bool:
    """Whether mypy's cache for ``options`` holds fine-grained dependencies (a language server's cache writer
    left them): a check then writes them too, or the entries it rewrites would leave them stale and the server's
    next daemon would start cold. A cache that does not exist is not created."""
    from mypy.build import DEPS_META_FILE, create_metastore

    major, minor = options.python_version
    prefix = os.path.join(options.cache_dir, f"{major}.{minor}")  # as mypy names it: cache_dir/3.11
    if options.cache_dir == os.devnull or not os.path.isdir(prefix):
        return False
    store = create_metastore(options, parallel_worker=False)
    try:
        store.getmtime(DEPS_META_FILE)
    except FileNotFoundError:
        return False
    finally:
        store.close()
    return True


def _run_check(paths: list[str], extra_args: list[str], *, unknowns: bool = False) -> int:
    from mypy import build
    from mypy.errors import CompileError
    from mypy.main import process_options

    from ._unknowns import UNKNOWNS_FLAGS, forget, fresh_sources, known_line, summary

    started = time.time()
    flags = [*UNKNOWNS_FLAGS, *extra_args] if unknowns else extra_args
    sources, options = process_options([*flags, *paths], stdout=sys.stdout, stderr=sys.stderr)
    with_plugin(options)
    fresh = fresh_sources(options, sources) if unknowns else []
    try:
        result = build.build(sources, options, stdout=sys.stdout, stderr=sys.stderr)
        messages = result.errors
    except CompileError as error:
        for message in error.messages:
            print(message, file=sys.stderr)
        return 2
    for message in messages:
        print(message)
    if unknowns:
        forget(result, fresh)
        status = _report(messages, len(sources), started)
        print(known_line(*summary(result, sources)))
        return status
    return _report(messages, len(sources), started)


def _report(messages: list[str], checked: int, started: float) -> int:
    """mypy's closing line (with the plugin named); the exit status."""
    errors = sum(1 for m in messages if ": error:" in m)
    files = len({m.split(":", 1)[0] for m in messages if ": error:" in m})
    if errors:
        print(
            f"Found {errors} error{'s' * (errors != 1)} in {files} file{'s' * (files != 1)} "
            f"(checked {checked} source file{'s' * (checked != 1)}) [typed_xmap plugin on, "
            f"{time.time() - started:.1f}s]"
        )
        return 1
    print(f"Success: no issues found in {checked} source file{'s' * (checked != 1)} [typed_xmap plugin on]")
    return 0
