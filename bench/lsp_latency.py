"""``typed-xmap lsp``: editor start to first diagnostics (cold, warm, a new file) and edit to new diagnostics.

A real LSP client (pytest-lsp's, on pygls) drives the server over stdio; the model is a ~500-line stack of
attention and MLP blocks in model code's style, with a planted named-axis bug.

- **Start**: from launching the server to the model's first diagnostics (initialize, didOpen included). *Cold*:
  the project has no mypy cache (a full check); the server then leaves one (its cache writer, which this script
  waits for). *Warm*: the cache is there (as ``typed-xmap check --cache-fine-grained`` also leaves it): a check
  against it.
- **New file**: a file created while the server runs, opened: didOpen -> its diagnostics (no daemon restart).
- **Edits**, once warm: each round plants or removes the bug, either saved (save -> publishDiagnostics) or left
  unsaved in the buffer (didChange -> publishDiagnostics: the server's debounce pause included).

The load average of the machine (``/proc/loadavg``) is printed with the figures.

    python bench/lsp_latency.py [rounds] [warm starts]
"""

from __future__ import annotations

import asyncio
import os
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


async def _open(project: Path, source: str, *, edits: int = 0) -> tuple[float, list[float], list[float], float]:
    """Seconds from launching the server to the model's first diagnostics; then, with ``edits``, the save and
    unsaved-edit rounds and a new file's didOpen -> diagnostics."""
    path = project / "model.py"
    uri = from_fs_path(str(path)) or ""
    started = time.perf_counter()
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "typed_xmap._tools._cli", "lsp", cwd=str(project))
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(project))
        )
    )

    async def diagnostics(of: str = uri) -> list[lsp.Diagnostic]:
        """The next diagnostics published for ``of`` (the client keeps the latest per file; a check publishes
        for each file, faster than one notification can be awaited after another)."""
        while of not in client.diagnostics:
            await asyncio.sleep(0.005)
        return list(client.diagnostics.pop(of))

    item = lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=_planted(source, True))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
    first = await _timed(diagnostics(), started, 0, True)
    saved, unsaved = [], []
    for round_ in range(edits):
        buggy = round_ % 2 == 1
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
    for round_ in range(edits):
        buggy = round_ % 2 == 0
        started = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=edits + round_ + 2),
                [lsp.TextDocumentContentChangeWholeDocument(text=_planted(source, buggy))],
            )
        )
        unsaved.append(await _timed(diagnostics(), started, round_, buggy))
    new_file = 0.0
    if edits:
        extra = project / "extra.py"
        extra.write_text(NEW_FILE)
        extra_uri = from_fs_path(str(extra)) or ""
        started = time.perf_counter()
        item = lsp.TextDocumentItem(uri=extra_uri, language_id="python", version=1, text=NEW_FILE)
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
        new_file = await _timed(diagnostics(extra_uri), started, 0, True)
    if not edits:
        _wait_for_cache_writer(project)  # the cold start's writer leaves the cache the warm starts read
    await client.shutdown_session()
    await client.stop()
    return first, saved, unsaved, new_file


NEW_FILE = """\
import typed_xmap.numpy as tnp

from model import Tokens


def pooled(x: Tokens) -> Tokens:
    return tnp.mean(x, "tokens")
"""


def _wait_for_cache_writer(project: Path) -> None:
    """Until the server's cache writer (``typed-xmap check`` of the model, in ``project``) has finished."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and any(_writers(project)):
        time.sleep(0.2)


def _writers(project: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            if b"_launch" in b"".join(command) and b"cache" in command and os.readlink(proc / "cwd") == str(project):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


async def _timed(published: Awaitable[list[lsp.Diagnostic]], started: float, round_: int, buggy: bool) -> float:
    """Seconds from ``started`` to the diagnostics; they must hold the planted bug iff there is one."""
    found = await published
    elapsed = time.perf_counter() - started
    if len(found) != int(buggy):
        raise SystemExit(f"round {round_}: expected {int(buggy)} diagnostic(s), got {found}")
    return elapsed


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(rounds: int = 6, starts: int = 3) -> None:
    """Run the measurement (``typed-xmap bench lsp_latency`` calls it with the defaults)."""
    load = _load()
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
        source = model()
        (project / "model.py").write_text(source)
        cold, _, _, _ = asyncio.run(_open(project, source))
        warm = [asyncio.run(_open(project, source))[0] for _ in range(starts)]
        first, saved, unsaved, new_file = asyncio.run(_open(project, source, edits=rounds))
    warm.append(first)
    print(
        f"{len(source.splitlines())} lines; editor start -> first diagnostics: cold (no cache) {cold:.2f}s, "
        f"warm (cache present) median {statistics.median(warm):.2f}s (min {min(warm):.2f}s, max {max(warm):.2f}s "
        f"over {len(warm)} starts)"
    )
    print(f"a file created while the server runs: didOpen -> its diagnostics {new_file:.2f}s")
    for name, times in (("save", saved), ("unsaved edit (didChange)", unsaved)):
        print(
            f"{name} -> diagnostics, warm: median {statistics.median(times):.2f}s, min {min(times):.2f}s, "
            f"max {max(times):.2f}s over {rounds} edits"
        )
    print(f"load average (1, 5, 15 min) before: {load}; after: {_load()} (on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main(*(int(argument) for argument in sys.argv[1:3]))
