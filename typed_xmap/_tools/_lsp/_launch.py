"""The language server's child processes: mypy's daemon (``_dmypy.EditorServer``) and the cache writer.

    python -m typed_xmap._tools._lsp._launch daemon SERVER_PID SESSION_FOLDER STATUS_FILE SHADOWS_FILE FLAG...
    python -m typed_xmap._tools._lsp._launch cache SERVER_PID SESSION_FOLDER FILE...

The daemon reads the project's config itself (the server need not import mypy's option parser: a daemon
started early, while the server starts, is ready sooner), the shadows held when it was started from a file.
The cache writer is ``typed-xmap check --cache-fine-grained`` of the files the daemon checked, at the lowest
priority: it leaves mypy's cache with its fine-grained dependencies, which the next daemon starts from.

Neither outlives the server. The server stops them (SIGTERM: the daemon then removes its socket folder and its
own folder); a server that was killed cannot, so each polls its parent's pid and, once the server is gone,
removes the server's session folder and stops.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.5


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)  # in the main thread: mypy's serve() closes its socket on the way out


def watch_parent(parent: int, session: Path) -> None:
    """Once ``parent`` (the server) has exited, remove ``session`` and stop this process (SIGTERM)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_S)
        shutil.rmtree(session, ignore_errors=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def daemon(parent: str, session: str, status_file: str, shadows_file: str, *flags: str) -> None:
    """Serve dmypy's requests (and ``shadow``) until stopped; the daemon's folder goes with it. Its options
    are read as ``typed-xmap check`` reads them (the project's config from the working directory, then
    ``with_plugin``), mypy's ``FLAGS`` and the shadows held when it was started added."""
    import json

    from mypy.dmypy_server import process_start_options

    from .._check import with_plugin
    from ._dmypy import EditorServer

    own = Path(status_file).parent
    signal.signal(signal.SIGTERM, _stop)
    watch_parent(int(parent), Path(session))
    try:
        options = process_start_options(list(flags), allow_sources=False)
        if not options.config_file:  # no config: an empty one, in the session's folder (with_plugin needs one)
            options.config_file = str(Path(session) / "mypy.ini")
            Path(options.config_file).write_text("[mypy]\n")
        options = with_plugin(options)
        options.shadow_file = json.loads(Path(shadows_file).read_text()) or None
        EditorServer(options, status_file, own).serve()
    finally:
        shutil.rmtree(own, ignore_errors=True)


def cache(parent: str, session: str, *files: str) -> None:
    """``typed-xmap check --cache-fine-grained FILES`` at the lowest priority, for the cache it writes (with
    mypy's fine-grained dependencies, which a plain check writes only into a cache that holds them already); its
    report is not read (its temporary folders go in the session's folder, its ``TMPDIR``)."""
    from .._check import run_check

    if hasattr(os, "nice"):
        os.nice(19)
    signal.signal(signal.SIGTERM, _stop)
    watch_parent(int(parent), Path(session))
    run_check(list(files), ["--cache-fine-grained"], fast_exit=True)


COMMANDS: dict[str, Callable[..., None]] = {"daemon": daemon, "cache": cache}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
