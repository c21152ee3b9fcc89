"""``typed-xmap lsp`` end to end over stdio, driven by a real LSP client (pytest-lsp's, built on pygls).

One session on a small project (a ``mypy.ini`` of its own, read by the server): initialize; a model with a
planted bug gets the plugin's diagnostic on the bug's line with its code; hover and inlay hints show NamedArray
types in the annotation notation (``NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]``, a size from a config as
written); unsaved edits (didChange, the file on disk untouched) move, plant and fix diagnostics on the buffer's
lines, and hover and hints read the buffer; a fixed file clears its diagnostic on save; after the mypy daemon is
killed, the next save is checked by a new one; a file created after the server started is checked on open, by
the same daemon. A daemon starts from the mypy cache a check left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_session import INITIALIZED, daemons_only, diagnostics, edit, hover, start
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from typed_xmap._tools._lsp._format import format_type, is_type
from typed_xmap._tools._lsp._report import MESSAGE

MODEL = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def mlp(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed hidden"]) -> NamedArray[f32, "batch"]:
    hidden = tnp.einsum("{embed},{embed,hidden}->{hidden}", x, w)
    activated = tnp.relu(hidden)
    return tnp.sum(activated, "nope")  # bug: no axis 'nope'


def untyped(n):  # the project's config asks for annotations (disallow_untyped_defs)
    return n


class Config:
    mlp: int = 64


def widen(cfg: Config) -> None:
    wide = tnp.zeros({"batch": 8, "mlp": cfg.mlp // 2}, dtype="float32")
"""
BUG_LINE = 7  # 0-based: the line with "# bug"
FOUND = [(BUG_LINE, "named-axis-missing"), (10, "no-untyped-def")]


async def _unsaved_edits(client: LanguageClient, uri: str, model: Path) -> None:
    """Edits that never reach the disk: diagnostics, hovers and hints follow the buffer."""
    found = await diagnostics(client, uri, lambda: edit(client, uri, 2, (0, 0), (0, 0), "# unsaved\n\n"))
    # every line has moved down two
    assert [(d.range.start.line, d.code) for d in found] == [(line + 2, code) for line, code in FOUND], found
    bug = MODEL.splitlines()[BUG_LINE].index('"nope"')
    fix = lambda: edit(client, uri, 3, (BUG_LINE + 2, bug), (BUG_LINE + 2, bug + len('"nope"')), '"hidden"')
    assert [(d.range.start.line, d.code) for d in await diagnostics(client, uri, fix)] == [(12, "no-untyped-def")]
    found = await diagnostics(
        client,
        uri,
        lambda: edit(client, uri, 4, (BUG_LINE + 2, bug), (BUG_LINE + 2, bug + len('"hidden"')), '"nope2"'),
        lambda: edit(client, uri, 5, (21, 31), (21, 32), "16"),  # typed before the pause: "batch": 8 -> 16
    )
    assert [(d.range.start.line, d.code) for d in found] == [(line + 2, code) for line, code in FOUND], found
    assert "'nope2'" in found[0].message
    assert 'NamedArray[f32, "hidden batch"]' in await hover(client, uri, 7, 6)  # `hidden`, two lines down
    assert 'NamedArray[f32, "batch=16 mlp=cfg.mlp // 2"]' in await hover(client, uri, 21, 6)
    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(20, 0), lsp.Position(22, 0)))
    )
    assert [(h.position.line, str(h.label)) for h in hints or []] == [
        (21, ': NamedArray[f32, "batch=16 mlp=cfg.mlp // 2"]')
    ]
    assert model.read_text() == MODEL  # nothing was saved


async def _session(project: Path) -> None:
    model = project / "model.py"
    uri = from_fs_path(str(model))
    assert uri is not None
    client = await start(project)
    try:
        capabilities = INITIALIZED[client].capabilities
        assert capabilities.hover_provider and capabilities.inlay_hint_provider

        item = lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=MODEL)
        found = await diagnostics(
            client, uri, lambda: client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
        )
        assert [(d.range.start.line, d.code) for d in found] == FOUND, found
        assert "reduces over axis 'nope'" in found[0].message and "Fix:" in found[0].message

        # hover: a local (its assignment), a parameter (where the body uses it), an expression (the call)
        on_local = await hover(client, uri, 5, 6)
        on_param = await hover(client, uri, 4, 8)
        on_call = await hover(client, uri, 6, 30)
        assert 'NamedArray[f32, "hidden batch"]' in on_local and 'NamedArray[f32, "hidden batch"]' in on_call
        assert 'NamedArray[f32, "batch embed"]' in on_param
        on_config = await hover(client, uri, 19, 6)  # a size from a config attribute, as the user wrote it
        assert 'NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]' in on_config, on_config
        for shown in (on_local, on_param, on_call, on_config):
            assert "NamedArray_" not in shown and "floating[" not in shown and "Shape_" not in shown, shown

        hints = await client.text_document_inlay_hint_async(
            lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(21, 0)))
        )
        assert hints is not None
        placed = {(h.position.line, h.position.character): str(h.label) for h in hints}
        assert placed == {  # after `hidden`, `activated` and `wide`
            (5, 10): ': NamedArray[f32, "hidden batch"]',
            (6, 13): ': NamedArray[f32, "hidden batch"]',
            (19, 8): ': NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]',
        }, placed

        await _unsaved_edits(client, uri, model)

        # fixed on disk and saved: the diagnostic is cleared
        model.write_text(MODEL.replace('"nope"', '"hidden"'))
        save = lambda: client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
        assert [d.code for d in await diagnostics(client, uri, save)] == ["no-untyped-def"]

        # the daemon dies: the next save starts a new one and is checked as before
        pids = daemons_only(project)
        assert pids, "no mypy daemon found for the session"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        model.write_text(MODEL)
        found = await diagnostics(client, uri, save)
        assert [(d.range.start.line, d.code) for d in found] == FOUND, found
        assert not set(daemons_only(project)) & set(pids)

        # a file the server has not seen (created after it started): the daemon is told of its buffer, no restart
        daemons = daemons_only(project)
        second = project / "second.py"
        second.write_text("x: int = 1\n")
        second_uri = from_fs_path(str(second)) or ""
        item = lsp.TextDocumentItem(uri=second_uri, language_id="python", version=1, text="x: int = 'one'\n")
        opened = await diagnostics(
            client, second_uri, lambda: client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
        )
        assert [d.code for d in opened] == ["assignment"]
        assert daemons_only(project) == daemons
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").exists(), reason="finds the daemon to kill through /proc")
def test_lsp_session_over_stdio(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # the project's own config, without the plugin: the server reads it and adds the plugin
    (project / "mypy.ini").write_text("[mypy]\ndisallow_untyped_defs = True\n")
    (project / "model.py").write_text(MODEL)
    asyncio.run(_session(project))


INSPECTED = [  # dmypy inspect's answers on programs like MODEL, as the server receives them
    (
        "\"NamedArray_[floating[_32Bit], Shape_[Literal['hidden batch']], tuple[Any, ...]]\"",
        'NamedArray[f32, "hidden batch"]',
    ),
    (
        "\"NamedArray_[floating[_32Bit], Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]\"",
        'NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]',
    ),
    (
        "\"tuple[NamedArray_[floating[_32Bit], Shape_[Literal['hidden batch']], tuple[Any, ...]], "
        "NamedArray_[floating[_32Bit], Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]]\"",
        'tuple[NamedArray[f32, "hidden batch"], NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]]',
    ),
    (
        "\"NamedArray_[Any, Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]\"",
        'NamedArray[Any, "batch=8 mlp=cfg.mlp // 2"]',
    ),
    ('"dict[str, int]"', "dict[str, int]"),
    ('"None"', "None"),
]


@pytest.mark.parametrize(("inspected", "shown"), INSPECTED)
def test_hover_text_in_the_annotation_notation(inspected: str, shown: str) -> None:
    """Every NamedArray in an inspected type reads as annotated; other types pass through unquoted."""
    assert is_type(inspected)
    assert format_type(inspected) == shown


def test_a_sentence_is_not_a_type() -> None:
    assert not is_type("Can't find any expressions at position 15:10")


def test_the_server_imports_no_jax() -> None:
    """The LSP is a tool: it imports pygls and mypy's daemon client, not the runtime (nor jax)."""
    code = (
        "import sys, typed_xmap._tools._lsp._server; "
        "print('jax' in sys.modules, 'typed_xmap._value._named_array' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.slow
def test_inspect_prints_the_annotation_notation(tmp_path: Path) -> None:
    """``typed-xmap inspect`` asks a running ``dmypy`` what ``dmypy inspect`` would, and prints NamedArray types
    as annotated (dmypy's own answer is the encoding: no plugin hook reaches mypy's inspections)."""
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
    (tmp_path / "model.py").write_text(MODEL)
    status = str(tmp_path / "dmypy.json")
    dmypy = [sys.executable, "-m", "mypy.dmypy", "--status-file", status]
    cli = [sys.executable, "-m", "typed_xmap._tools._cli", "inspect", "--status-file", status]

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)

    try:
        run(*dmypy, "run", "--export-types", "--", "model.py")
        encoded = "NamedArray_[floating[_32Bit], Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]"
        assert run(*dmypy, "inspect", "model.py:20:5:20:8").stdout == f'"{encoded}"\n'
        assert run(*cli, "model.py:20:5:20:8").stdout == '"NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]"\n'
        spans = run(*cli, "model.py:6:5", "--include-span", "--limit", "1")
        assert spans.stdout == '6:5:6:10 -> "NamedArray[f32, "hidden batch"]"\n', spans
        missing = run(*cli, "model.py:99:1")
        assert missing.returncode == 1 and "Can't find any expressions" in missing.stdout
    finally:
        run(*dmypy, "stop")


HELPER = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def total(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x, "nope")
"""


def _rows(report: str) -> list[str]:
    return sorted(row for row in report.splitlines() if MESSAGE.match(row))


@pytest.mark.slow
def test_the_daemon_starts_from_the_cache_a_check_left(tmp_path: Path) -> None:
    """A cold start (no cache) checks everything and starts the cache writer (``typed-xmap check`` of the same
    file); the next daemon starts from that cache: the same report at once (the cache's errors, an imported
    module's included, though mypy's start from a cache replays none), then from a check of the file, which
    hovers read; no writer; a file changed on disk since is read as changed."""
    from typed_xmap._tools._lsp._daemon import Daemon

    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
    (tmp_path / "helper.py").write_text(HELPER)
    model = tmp_path / "model.py"
    model.write_text("from helper import total\n" + MODEL)
    cold = Daemon(tmp_path)
    try:
        full = cold.check([str(model)])
        assert cold.writer is not None, "a cold start leaves no cache behind"
        assert cold.writer.wait(timeout=600) == 1  # the check's status: errors found
    finally:
        cold.close()
    assert {row.split(":")[0] for row in _rows(full)} == {"helper.py", "model.py"}, full
    warm = Daemon(tmp_path)
    try:
        assert _rows(warm.check([str(model)])) == _rows(full)  # from the cache
        assert warm.writer is None and not warm.exported
        assert _rows(warm.check([str(model)])) == _rows(full)  # checked
        assert any("hidden batch" in shown for shown in warm.inspect(f"{model}:7:5:7:10"))
        warm.stop()
        (tmp_path / "helper.py").write_text(HELPER.replace('"nope"', '"embed"'))
        assert {row.split(":")[0] for row in _rows(warm.check([str(model)]))} == {"model.py"}
    finally:
        warm.close()
