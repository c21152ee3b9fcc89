"""``typed-xmap lsp`` shows the collectives ``typed-xmap check --comm`` knows, as diagnostics of severity
Information with the code ``named-comm`` on their lines (a real LSP client over stdio, ``lsp_session``): on open,
after an unsaved edit that moves them, and after a save; the file on disk is never changed, and errors keep
their own diagnostics. The server starts from the mypy cache ``typed-xmap check`` left (without ``named-comm``):
the code is turned on for the open files alone, so that cache stays valid for the rest (no cache writer starts)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_session import daemon_pids, daemons_only, diagnostics, edit, open_document, start, uri_of
from lsprotocol import types as lsp

pytestmark = pytest.mark.slow

MODEL = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def project(x: NamedArray[f32, "batch@data embed@model"], w: NamedArray[f32, "embed@model mlp"]) -> None:
    tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", x, w)
    tnp.sum(x, "nope")
"""


def _shown(found: list[lsp.Diagnostic]) -> list[tuple[int, object, object]]:
    return [(d.range.start.line, d.code, d.severity) for d in found]


async def _session(project: Path) -> None:
    model = project / "model.py"
    uri = uri_of(model)
    client = await start(project)
    try:
        found = await diagnostics(client, uri, lambda: open_document(client, uri, MODEL))
        information, error = lsp.DiagnosticSeverity.Information, lsp.DiagnosticSeverity.Error
        assert _shown(found) == [(5, "named-comm", information), (6, "named-axis-missing", error)], found
        assert (
            found[0].message
            == "collective: all-reduce over model: tnp.einsum(x, w) contracts 'embed', split over model"
        )
        # started from the cache (the open file's option does not make it stale): no cache writer
        assert daemon_pids(project) == daemons_only(project)
        found = await diagnostics(client, uri, lambda: edit(client, uri, 2, (0, 0), (0, 0), "# unsaved\n"))
        assert _shown(found) == [(6, "named-comm", information), (7, "named-axis-missing", error)], found
        model.write_text("# saved\n" + MODEL)
        save = lambda: client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
        assert _shown(await diagnostics(client, uri, save))[0] == (6, "named-comm", information)
        assert model.read_text() == "# saved\n" + MODEL  # the option rides in what mypy reads, not in the file
    finally:
        await client.shutdown_session()
        await client.stop()


def test_collectives_are_shown_on_their_lines(tmp_path: Path) -> None:
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    (tmp_path / "model.py").write_text(MODEL)
    # a check the editor starts warm from writes mypy's fine-grained dependencies (docs/guide/editor.md)
    check = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--cache-fine-grained", "model.py"]
    report = subprocess.run(check, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False).stdout
    assert "[named-axis-missing]" in report and "collective:" not in report  # named-comm is off in the cache
    asyncio.run(_session(tmp_path))
