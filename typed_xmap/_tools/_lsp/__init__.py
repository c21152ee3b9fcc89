"""``typed-xmap lsp``: a language server on stdio showing the plugin's diagnostics and named shapes.

Built on pygls (the LSP) and mypy's daemon (incremental checks); the editor set-ups are in
docs/guide/editor.md. Importing this package imports neither jax nor the runtime.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

__all__ = ["main"]


def main() -> int:
    """Serve the editor on stdin/stdout until it exits (0 after a shutdown request, else 1, as the LSP asks)
    or closes stdin; however it ends (SIGTERM included), mypy's daemon and the server's folder go with it."""
    from ._daemon import Daemon

    early = Daemon(Path.cwd().resolve())  # the editor starts the server in the workspace, as a rule
    early.spawn()  # mypy's daemon starts while the server does (one elsewhere replaces it at initialized)
    from ._server import server

    server.daemon = early

    def terminated(signum: int, frame: object) -> None:
        server.close()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # end as the signal ends a process

    signal.signal(signal.SIGTERM, terminated)
    try:
        server.start_io()
    finally:
        server.close()
    return 0 if server.shut_down else 1
