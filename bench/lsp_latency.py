"""``typed-xmap lsp``: time from an edit of a ~500-line model file to its new diagnostics, once warm.

A real LSP client (pytest-lsp's, on pygls) drives the server over stdio; the model is a stack of attention and
MLP blocks in model code's style. Each round plants or removes a named-axis bug on one line, either saved
(the time counted is save -> publishDiagnostics for that file) or left unsaved in the buffer (didChange ->
publishDiagnostics: the server's debounce pause included, the file on disk untouched). mypy's daemon
re-checks incrementally.

    python bench/lsp_latency.py [rounds]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities, make_test_lsp_client

HEADER = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Tokens = NamedArray[f32, "batch seq embed"]
Heads = NamedArray[f32, "batch seq heads head_dim"]
Proj = NamedArray[f32, "embed heads head_dim"]
"""
BLOCK = """

def project_{i}(x: Tokens, w: Proj) -> Heads:
    return tnp.einsum("{{embed}},{{embed,heads,head_dim}}->{{heads,head_dim}}", x, w)


def attention_{i}(x: Tokens, wq: Proj, wk: Proj, wv: Proj, wo: Proj) -> Tokens:
    q = project_{i}(x, wq)
    k = tx_rename(project_{i}(x, wk))
    v = tx_rename(project_{i}(x, wv))
    scores = tnp.einsum("{{seq,heads,head_dim}},{{kv,heads,head_dim}}->{{seq,heads,kv}}", q, k) / 8.0
    weights = tnp.softmax(scores, "kv")
    mixed = tnp.einsum("{{seq,heads,kv}},{{kv,heads,head_dim}}->{{seq,heads,head_dim}}", weights, v)
    return tnp.einsum("{{heads,head_dim}},{{embed,heads,head_dim}}->{{embed}}", mixed, wo)


def mlp_{i}(x: Tokens, w1: NamedArray[f32, "embed mlp"], w2: NamedArray[f32, "mlp embed"]) -> Tokens:
    hidden = tnp.relu(tnp.einsum("{{embed}},{{embed,mlp}}->{{mlp}}", x, w1))
    out = tnp.einsum("{{mlp}},{{mlp,embed}}->{{embed}}", hidden, w2)
    return x + out
"""
RENAME = """

def tx_rename(x: Heads) -> NamedArray[f32, "batch kv heads head_dim"]:
    import typed_xmap as tx

    return tx.rename(x, {"seq": "kv"})
"""


def model(blocks: int = 25) -> str:
    return HEADER + RENAME + "".join(BLOCK.format(i=i) for i in range(blocks))


def _planted(source: str, buggy: bool) -> str:
    return source.replace('tnp.softmax(scores, "kv")', 'tnp.softmax(scores, "kvv")', 1) if buggy else source


async def measure(project: Path, rounds: int) -> tuple[list[float], list[float]]:
    """The save -> diagnostics and the unsaved edit -> diagnostics times, ``rounds`` of each."""
    path = project / "model.py"
    source = model()
    path.write_text(source)
    uri = from_fs_path(str(path)) or ""
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "typed_xmap._tools._cli", "lsp", cwd=str(project))
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(project))
        )
    )

    async def diagnostics() -> list[lsp.Diagnostic]:
        while True:
            params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                return list(params.diagnostics)

    started = time.perf_counter()
    item = lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
    await diagnostics()
    print(f"{len(source.splitlines())} lines; first check (cold daemon) {time.perf_counter() - started:.2f}s")
    saved, unsaved = [], []
    for round_ in range(rounds):
        buggy = round_ % 2 == 0
        path.write_text(_planted(source, buggy))
        client.text_document_did_change(  # what the editor sends before it saves
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=round_ + 2),
                [lsp.TextDocumentContentChangeWholeDocument(text=_planted(source, buggy))],
            )
        )
        started = time.perf_counter()
        client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
        saved.append(await _timed(diagnostics(), started, round_, buggy))
    for round_ in range(rounds):
        buggy = round_ % 2 == 0
        started = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=rounds + round_ + 2),
                [lsp.TextDocumentContentChangeWholeDocument(text=_planted(source, buggy))],
            )
        )
        unsaved.append(await _timed(diagnostics(), started, round_, buggy))
    await client.shutdown_session()
    await client.stop()
    return saved, unsaved


async def _timed(published: Awaitable[list[lsp.Diagnostic]], started: float, round_: int, buggy: bool) -> float:
    """Seconds from ``started`` to the diagnostics; they must hold the planted bug iff there is one."""
    found = await published
    elapsed = time.perf_counter() - started
    if len(found) != int(buggy):
        raise SystemExit(f"round {round_}: expected {int(buggy)} diagnostic(s), got {found}")
    return elapsed


def main(rounds: int = 6) -> None:
    """Run the measurement (``typed-xmap bench lsp_latency`` calls it with the default)."""
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
        saved, unsaved = asyncio.run(measure(project, rounds))
    for name, times in (("save", saved), ("unsaved edit (didChange)", unsaved)):
        print(
            f"{name} -> diagnostics, warm: median {statistics.median(times):.2f}s, min {min(times):.2f}s, "
            f"max {max(times):.2f}s over {rounds} edits"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
