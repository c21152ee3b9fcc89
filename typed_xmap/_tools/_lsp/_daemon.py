"""mypy's daemon (dmypy) with the typed_xmap plugin, owned by the language server.

The daemon is a child process (``_launch``) started from options read the way ``typed-xmap check`` reads them
(the project's mypy config, plus the plugin: ``_check.with_plugin``), so each check after the first is mypy's
fine-grained incremental update. mypy reads each project file through its shadow (``_shadows``): the
editor's unsaved buffer, or the file on disk. A request to a daemon that died (killed, crashed) starts a new
one and is sent again once.
"""

from __future__ import annotations

import contextlib
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ._shadows import Shadows, project_files

# what the server parses: columns and ends on every message, codes shown, plain text
FLAGS = ["--show-column-numbers", "--show-error-end", "--show-error-codes", "--no-pretty", "--no-color-output"]


# a daemon left behind (the editor killed the server) exits after this long idle; a request restarts it
IDLE_EXIT_S = 3600


class DaemonError(RuntimeError):
    """The daemon could not be started or answered with an error."""


class Daemon:
    """One dmypy process for a project root; requests are serialized (the daemon serves one at a time)."""

    def __init__(self, root: Path, flags: list[str] | None = None) -> None:
        self.root = root
        self.flags = [*FLAGS, *(flags or [])]
        self.folder = Path(tempfile.mkdtemp(prefix="typed-xmap-lsp-"))
        self.status_file = str(self.folder / "dmypy.json")
        self.shadows = Shadows(self.folder / "shadows", project_files(root))
        self.process: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def start(self) -> None:
        from mypy.dmypy.client import get_status
        from mypy.dmypy_server import process_start_options
        from mypy.ipc import BadStatus

        from .._check import with_plugin

        with contextlib.chdir(self.root):  # mypy finds the project's config from the working directory
            flags = [*self.flags, *self.shadows.flags()]
            options = with_plugin(process_start_options(flags, allow_sources=False))
        options_file = self.folder / "options.pickle"
        options_file.write_bytes(pickle.dumps(options.snapshot()))
        Path(self.status_file).unlink(missing_ok=True)
        command = [sys.executable, "-m", "typed_xmap._tools._lsp._launch", str(options_file), self.status_file]
        with (self.folder / "daemon.log").open("ab") as log:  # the child keeps its own copy of the handle
            self.process = subprocess.Popen(
                [*command, str(IDLE_EXIT_S)],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(BadStatus):
                get_status(self.status_file)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise DaemonError(f"mypy's daemon did not start; its log: {self.folder / 'daemon.log'}")

    def watch(self, path: Path) -> None:
        """Have mypy read ``path`` through a shadow; a file the daemon has none for costs it a restart."""
        if not self.shadows.covers(path):
            with self.lock:
                self.shadows.register(path)
                self.stop()  # the mapping is fixed at start: the next request starts a daemon that has it

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def close(self) -> None:
        """Stop the daemon and remove its folder (status file, log)."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        """Send ``command``; a dead daemon is restarted and the request sent again once."""
        from mypy.dmypy.client import request
        from mypy.ipc import BadStatus

        with self.lock:
            for attempt in range(2):
                if self.process is None or self.process.poll() is not None:
                    self.stop()
                    self.start()
                try:
                    # the client echoes the daemon's own prints to sys.stdout, the LSP channel: send them to stderr
                    with contextlib.redirect_stdout(sys.stderr):
                        response = request(self.status_file, command, **arguments)
                except BadStatus:
                    response = {"error": "the daemon is not running"}
                if "error" not in response:
                    return response
                if attempt == 1 or not self._died():
                    raise DaemonError(str(response["error"]))
        raise DaemonError("mypy's daemon died twice in a row")

    def _died(self) -> bool:
        """Whether the daemon has exited (a killed one may take a moment to); then it is cleared for a restart."""
        if self.process is not None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                return False
        self.stop()
        return True

    def check(self, files: list[str]) -> str:
        """mypy's report on ``files`` (one message a line), types kept for ``inspect``."""
        response = self.request("check", files=files, export_types=True)
        return str(response.get("out", "")) + str(response.get("err", ""))

    def inspect(self, location: str) -> list[str]:
        """The types dmypy infers at ``path:line:column[:end_line:end_column]`` (1-based), innermost first."""
        try:
            response = self.request("inspect", show="type", location=location, verbosity=0, limit=0)
        except DaemonError:
            return []  # no expression there, or the file has not been checked
        return [line for line in str(response.get("out", "")).splitlines() if line]
