"""``typed-xmap lsp`` under real editing, over stdio with a real LSP client (``lsp_session``).

Each document's diagnostics stay its own: a buffer that does not parse (typed half-way) gets its syntax error and
every other document keeps its diagnostics, hovers answering; only the workspace's Python documents are checked
(a text file, a file outside the workspace are not); a document opened by a URI with ``..`` segments gets its
diagnostics under that URI. However the server ends (a shutdown, stdin closed, ``exit`` without a shutdown,
SIGTERM, SIGKILL), no mypy daemon and no temporary folder of it outlives it, and the exit code is the LSP's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_session import daemon_pids, diagnostics, edit, hover, open_document, published, start, uri_of
from lsprotocol import types as lsp

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").exists(), reason="finds the server's daemons through /proc"),
]

A = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def total(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x, "embed")


def broken(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x, "nope")
"""
B = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

from a import total


def use(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    y = total(x)
    return tnp.sum(y, "seq")
"""
HALF_TYPED = 'def half(x: NamedArray[f32, "batch'
USED_EARLY = '\n\ndef early(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:\n    s\n    s = total(x)\n'
EARLY = [(11, "return"), (12, "has-type"), (12, "used-before-def")]  # in mypy's order


def _where(found: list[lsp.Diagnostic]) -> list[tuple[int, str | int | None]]:
    return [(d.range.start.line, d.code) for d in found]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with its mypy cache (``typed-xmap check`` leaves it): each server here starts warm."""
    root = tmp_path_factory.mktemp("workspace")
    (root / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
    (root / "a.py").write_text(A)
    (root / "b.py").write_text(B)
    (root / "c.py").write_text("x: int = 1\n")
    (root / "notes.txt").write_text("not python (\n")
    (root / "sub").mkdir()
    cli = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "a.py", "b.py", "c.py"]
    subprocess.run(cli, cwd=root, capture_output=True, timeout=600, check=False)
    return root


async def _isolation(project: Path, outside: Path) -> None:
    a, b = uri_of(project / "a.py"), uri_of(project / "b.py")
    client = await start(project)
    try:
        found = await published(
            client, [a, b], lambda: open_document(client, a, A), lambda: open_document(client, b, B)
        )
        assert _where(found[a]) == [(9, "named-axis-missing")] and _where(found[b]) == [(8, "named-axis-missing")]
        await hover(client, b, 7, 4)  # waits for the checks asked so far: what follows is published after it

        # typed half-way: a.py gets its syntax error, b.py (which imports it) keeps its own, hovers answer
        typed = await published(client, [a, b], lambda: edit(client, a, 2, (10, 0), (10, 0), HALF_TYPED))
        assert typed[a] and {*_where(typed[a])} == {(10, "syntax")}, typed
        assert typed[b] == found[b]
        assert 'NamedArray[f32, "batch"]' in await hover(client, b, 7, 4)

        # neither a text file nor a file outside the workspace is checked; a URI with `..` keeps its spelling
        open_document(client, uri_of(project / "notes.txt"), "not python (\n", language="plaintext")
        open_document(client, uri_of(outside), "x: int = 'one'\n")
        dotted = uri_of(project / "sub") + "/../c.py"
        opened = await diagnostics(client, dotted, lambda: open_document(client, dotted, "x: int = 'one'\n"))
        assert _where(opened) == [(0, "assignment")]
        assert uri_of(project / "c.py") not in client.diagnostics
        assert uri_of(project / "notes.txt") not in client.diagnostics and uri_of(outside) not in client.diagnostics
        params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri_of(outside)), lsp.Position(0, 0))
        assert await client.text_document_hover_async(params) is None

        # finished typing: a.py's own diagnostics are back, b.py's unchanged
        await hover(client, b, 7, 4)
        done = await published(client, [a, b], lambda: edit(client, a, 3, (10, 0), (10, len(HALF_TYPED)), ""))
        assert done == found

        # a name used before its definition: what a fresh check says (mypy's update left the function, deferred
        # twice, half-checked), and kept when another file's update comes after (its used-before-def pass)
        early = await published(client, [a, b], lambda: edit(client, b, 2, (9, 0), (9, 0), USED_EARLY))
        assert _where(early[b]) == [(8, "named-axis-missing"), *EARLY], early[b]
        later = await published(client, [a, b], lambda: edit(client, a, 4, (0, 0), (0, 0), "\n"))
        assert _where(later[b]) == _where(early[b]) and [d.range.start.line for d in later[a]] == [10]
    finally:
        await client.shutdown_session()
        await client.stop()


def test_a_broken_document_leaves_the_others_alone(project: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.py").write_text("x: int = 1\n")
    asyncio.run(_isolation(project, tmp_path / "outside.py"))


ENDINGS = {  # how the editor ends the server -> the exit code the LSP asks for (a signal's, negated)
    "shutdown": 0,  # then exit
    "exit": 1,  # without a shutdown
    "eof": 1,  # stdin closed
    "SIGTERM": -signal.SIGTERM,
    "SIGKILL": -signal.SIGKILL,
}


async def _ended(project: Path, temporary: Path, ending: str) -> int | None:
    client = await start(project, env={**os.environ, "TMPDIR": str(temporary)})
    a = uri_of(project / "a.py")
    await diagnostics(client, a, lambda: open_document(client, a, A))  # the daemon runs
    assert daemon_pids(project)
    server = client._server
    assert server is not None and server.stdin is not None
    if ending == "shutdown":
        await client.shutdown_session()
    elif ending == "exit":
        client.exit(None)
    elif ending == "eof":
        server.stdin.close()
    else:
        server.send_signal(getattr(signal, ending))
    code = await asyncio.wait_for(server.wait(), timeout=120)
    await client.stop()
    return code


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_nothing_outlives_the_server(project: Path, tmp_path: Path, ending: str) -> None:
    """The daemon (and a cache writer) and every temporary folder go with the server; a killed server's are
    removed by their watchdog (each child polls its parent)."""
    temporary = tmp_path / "t"  # short: mypy's daemon makes its unix socket there (108 characters at most)
    temporary.mkdir()
    assert asyncio.run(_ended(project, temporary, ending)) == ENDINGS[ending]
    deadline = time.monotonic() + 60
    while (daemon_pids(project) or any(temporary.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert daemon_pids(project) == []
    assert list(temporary.iterdir()) == []


def test_a_daemon_killed_while_it_starts_is_started_again(project: Path) -> None:
    """The scripted editor kills daemons at random: one killed while the server waits for it to listen (on a
    loaded machine a start takes long) is replaced and the check answered, not failed (that check's diagnostics
    were never published). Whenever the kill lands (before or after it listens) the check is answered."""
    import threading

    from typed_xmap._tools._lsp._daemon import Daemon

    daemon = Daemon(project)

    def kill() -> None:
        while daemon.process is None:
            time.sleep(0.001)
        daemon.process.kill()  # the first daemon, as soon as it exists: it has not read its options yet

    killer = threading.Thread(target=kill)
    try:
        killer.start()
        report = daemon.check([str(project / "a.py")])
        assert "named-axis-missing" in report and daemon.starts == 2
    finally:
        killer.join()
        daemon.close()


def test_an_import_new_to_the_build(project: Path) -> None:
    """mypy's update never adds a stdlib module an edit newly imports (mypy#10047): the build names a module it
    lacks, and that check and every one after failed (``KeyError: 'ctypes'``). The check is made again from a
    new build, and the next edits are checked as updates."""
    from typed_xmap._tools._lsp._daemon import Daemon

    daemon, c = Daemon(project), project / "c.py"
    try:
        reports = []
        for text in ["x: int = 1\n", "import ctypes\nx: int = 1\n", "import ctypes\nx: int = ''\n", "import ctypes\n"]:
            daemon.shadows.hold(c, text)
            reports.append(daemon.check([str(c)]))
        assert [("error: Incompatible types in assignment" in report) for report in reports] == [
            False,
            False,
            True,
            False,
        ], reports
        assert daemon.starts == 1
    finally:
        daemon.close()
