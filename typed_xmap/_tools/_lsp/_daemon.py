"""mypy's daemon (dmypy) with the typed_xmap plugin, owned by the language server.

The daemon is a child process (``_launch``, running ``_dmypy.EditorServer``) started from options read the way
``typed-xmap check`` reads them (the project's mypy config, plus the plugin: ``_check.with_plugin``), so each
check after the first is mypy's fine-grained incremental update. It starts from mypy's cache of that config
when that cache holds mypy's fine-grained dependencies: reopening the editor on an unchanged project costs a
check of the open files against the cache, not a full check. When a start found modules the cache lacks (or a
cache without those dependencies), a cache writer (``typed-xmap check --cache-fine-grained`` of the same files,
at the lowest priority) leaves them in the cache for the next start; a ``typed-xmap check`` keeps them up to
date in a cache that holds them (``_check.holds_fine_grained``). mypy reads an open file's unsaved buffer
through its shadow (``_shadows``). A request to a daemon that died (killed, crashed) starts a new one and is
sent again once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ._shadows import Shadows

# what the server parses: columns and ends on every message, codes shown, plain text; a start from the cache
FLAGS = [
    "--show-column-numbers",
    "--show-error-end",
    "--show-error-codes",
    "--no-pretty",
    "--no-color-output",
    "--use-fine-grained-cache",
]
LAUNCH = [sys.executable, "-m", "typed_xmap._tools._lsp._launch"]
START_S = 300
"""How long a daemon may take to listen (it imports mypy and the plugin and reads the config: seconds, or a
minute on a loaded machine) before the check that waits for it fails."""
STOP_S = 10
"""How long a stopped child may take to exit (the daemon removes its socket folder) before it is killed."""


class DaemonError(RuntimeError):
    """The daemon could not be started or answered with an error."""


class Daemon:
    """One dmypy process for a project root; requests are serialized (the daemon serves one at a time)."""

    def __init__(self, root: Path, flags: list[str] | None = None) -> None:
        self.root = root
        self.flags = [*FLAGS, *(flags or [])]
        self.folder = Path(tempfile.mkdtemp(prefix="typed-xmap-lsp-"))
        self.shadows = Shadows(self.folder / "shadows")
        self.status_file = ""
        self.starts = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.writer: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.closed = False  # by the server's end: no daemon is started again
        self.ready = False  # the daemon (spawned early) has answered its status
        self.exported = True  # the last check left the checked files' types (a start from the cache does not)

    def spawn(self) -> None:
        """Start the daemon process and return (it reads the project's config and listens meanwhile)."""
        if self.closed:
            raise DaemonError("the language server has shut down")
        self.starts += 1
        own = self.folder / f"daemon-{self.starts}"  # the daemon removes it when it stops
        own.mkdir()
        shadows = own / "shadows.json"
        shadows.write_text(json.dumps(self.shadows.flags()))
        self.status_file = str(own / "dmypy.json")
        self.process = self._child("daemon", self.status_file, str(shadows), *self.flags)

    def start(self) -> None:
        """A daemon answering requests: spawned unless one is (being) started, then waited for."""
        from mypy.dmypy.client import get_status
        from mypy.ipc import BadStatus

        if self.process is not None and self.process.poll() is not None:
            self.stop()  # died: what it left goes
        if self.process is None:
            self.spawn()
        assert self.process is not None
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            with contextlib.suppress(BadStatus):
                get_status(self.status_file)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise DaemonError(f"mypy's daemon did not start; its log: {self.folder / 'daemon.log'}")

    def _child(self, command: str, *arguments: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """``_launch``'s ``command``, watching this process (it stops once the server is gone)."""
        with (self.folder / "daemon.log").open("ab") as log:  # the child keeps its own copy of the handle
            return subprocess.Popen(
                [*LAUNCH, command, str(os.getpid()), str(self.folder), *arguments],
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )

    def stop(self) -> None:
        """Stop the daemon (it removes its own folder and socket); a daemon that does not exit is killed, and
        the socket folder it left (its status file names it) is removed."""
        _end(self.process)
        self.process = None
        self.ready = False
        with contextlib.suppress(OSError, ValueError, KeyError):
            socket = Path(json.loads(Path(self.status_file).read_text())["connection_name"])
            if socket.name == "dmypy.sock" and [*socket.parent.iterdir()] == [socket]:  # mypy's mkdtemp
                shutil.rmtree(socket.parent)

    def close(self) -> None:
        """Stop the daemon and the cache writer, and remove the session's folder (shadows, log)."""
        self.closed = True
        _end(self.writer)
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        """Send ``command``; a dead daemon (also one that died while it started: killed, crashed) is restarted
        and the request sent again once."""
        from mypy.dmypy.client import request
        from mypy.ipc import BadStatus

        with self.lock:
            for attempt in range(2):
                if self.process is None or self.process.poll() is not None or not self.ready:
                    try:
                        self.start()
                    except DaemonError:
                        if attempt == 1 or self.closed:
                            raise
                        continue  # start() clears what a daemon that exited left, then spawns another
                    self.ready = True
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
        """mypy's report on ``files`` (one message a line), types kept for ``inspect`` (unless ``exported`` is
        false: a start from the cache, whose next check checks them). A start that found modules the cache lacks
        starts the cache writer on ``files`` (once a session)."""
        response = self.request("check", files=files, export_types=True, shadows=self.shadows.flags())
        self.exported = bool(response.get("exported", True))
        if response.get("uncached") and self.writer is None:
            # its temporary folders (a config-less project's empty config) go with the session's
            self.writer = self._child("cache", *files, env={**os.environ, "TMPDIR": str(self.folder)})
        return str(response.get("out", "")) + str(response.get("err", ""))

    def inspect(self, location: str) -> list[str]:
        """The types dmypy infers at ``path:line:column[:end_line:end_column]`` (1-based), innermost first."""
        try:
            response = self.request("inspect", show="type", location=location, verbosity=0, limit=0)
        except DaemonError:
            return []  # no expression there, or the file has not been checked
        return [line for line in str(response.get("out", "")).splitlines() if line]


def _end(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM ``process`` (a child cleans up on it), SIGKILL it if it is still there ``STOP_S`` later."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
