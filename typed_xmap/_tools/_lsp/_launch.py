"""mypy's daemon (what ``dmypy daemon`` runs: ``mypy.dmypy_server.Server``) started from options in a file.

``dmypy daemon --options-data=...`` takes the options on the command line, as one argument, which Linux caps at
128 KiB: too little for the ``--shadow-file`` pair of every file of a project of a thousand files (``_shadows``).

    python -m typed_xmap._tools._lsp._launch OPTIONS_FILE STATUS_FILE TIMEOUT_S
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path


def main(options_file: str, status_file: str, timeout: str) -> None:
    """Serve dmypy's requests until the idle ``timeout`` (seconds) passes or the daemon is stopped."""
    from mypy.dmypy_server import Server
    from mypy.options import Options

    options = Options().apply_changes(pickle.loads(Path(options_file).read_bytes()))
    Server(options, status_file, timeout=int(timeout)).serve()


if __name__ == "__main__":
    main(*sys.argv[1:])
