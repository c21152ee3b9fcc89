"""The language server's child processes: mypy's daemon (``_dmypy.EditorServer``) and the cache writer.

    python -m typed_xmap._tools._lsp._launch daemon SERVER_PID SESSION_FOLDER OPTIONS_FILE STATUS_FILE
    python -m typed_xmap._tools._lsp._launch cache SERVER_PID SESSION_FOLDER FILE...

The daemon reads its options from a file (``dmypy daemon --options-data=...`` takes them as one argument on the
command line). The cache writer is ``typed-xmap check`` of the files the daemon checked, at the lowest
priority: it leaves mypy's cache with its fine-grained dependencies, which the next daemon starts from.

Neither outlives the server. The server stops them (SIGTERM: the daemon then removes its socket folder and its
own folder); a server that was killed cannot, so each polls its parent's pid and, once the server is gone,
removes the server's session folder and stops.
"""

from __future__ import annotations

import os
import pickle
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


def daemon(parent: str, session: str, options_file: str, status_file: str) -> None:
    """Serve dmypy's requests (and ``shadow``) until stopped; the daemon's folder goes with it."""
    from mypy.options import Options

    from ._dmypy import EditorServer

    options = Options().apply_changes(pickle.loads(Path(options_file).read_bytes()))
    own = Path(status_file).parent
    signal.signal(signal.SIGTERM, _stop)
    watch_parent(int(parent), Path(session))
    try:
        EditorServer(options, status_file, own).serve()
    finally:
        shutil.rmtree(own, ignore_errors=True)


def cache(parent: str, session: str, *files: str) -> None:
    """``typed-xmap check FILES`` at the lowest priority, for the cache it writes; its report is not read (its
    temporary folders go in the session's folder, its ``TMPDIR``)."""
    from .._check import run_check

    if hasattr(os, "nice"):
        os.nice(19)
    signal.signal(signal.SIGTERM, _stop)
    watch_parent(int(parent), Path(session))
    run_check(list(files), [], fast_exit=True)


COMMANDS: dict[str, Callable[..., None]] = {"daemon": daemon, "cache": cache}

if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
