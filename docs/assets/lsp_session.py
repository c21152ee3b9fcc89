"""Render a real ``typed-xmap lsp`` session as HTML (and a PNG with headless Chromium): docs/guide/editor.md.

An LSP client (pytest-lsp's, on pygls) starts the server over stdio on MODEL, asks for diagnostics, a hover
and the inlay hints, and draws the file with what the server answered: hints in grey after the names, the
diagnostic under its line, the hover beside the name it was asked on.

    python docs/assets/lsp_session.py            # writes docs/assets/lsp-session.png
"""

from __future__ import annotations

import asyncio
import html
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities, make_test_lsp_client

HERE = Path(__file__).resolve().parent
MODEL = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Tokens = NamedArray[f32, "batch seq embed"]


def block(x: Tokens, w1: NamedArray[f32, "embed mlp"], w2: NamedArray[f32, "mlp embed"]) -> Tokens:
    hidden = tnp.relu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w1))
    out = tnp.einsum("{mlp},{mlp,embed}->{embed}", hidden, w2)
    return x + out / tnp.sqrt(tnp.mean(out * out, "embd"))
"""
HOVER_AT = (8, 4)  # 0-based: `out`


async def session(project: Path) -> tuple[list[lsp.Diagnostic], str, list[lsp.InlayHint]]:
    path = project / "model.py"
    path.write_text(MODEL)
    uri = from_fs_path(str(path)) or ""
    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "typed_xmap._tools._cli", "lsp", cwd=str(project))
    capabilities = client_capabilities("visual-studio-code")
    await client.initialize_session(
        lsp.InitializeParams(capabilities=capabilities, root_uri=from_fs_path(str(project)))
    )
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, MODEL)))
    while (params := await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)).uri != uri:
        pass
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(*HOVER_AT))
    )
    everything = lsp.Range(lsp.Position(0, 0), lsp.Position(len(MODEL.splitlines()), 0))
    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), everything)
    )
    await client.shutdown_session()
    await client.stop()
    shown = hover.contents.value if hover and isinstance(hover.contents, lsp.MarkupContent) else ""
    return list(params.diagnostics), shown.strip("`\n").removeprefix("python\n"), list(hints or [])


def render(diagnostics: list[lsp.Diagnostic], hover: str, hints: list[lsp.InlayHint]) -> str:
    rows = []
    for number, text in enumerate(MODEL.splitlines()):
        cuts = sorted(((h.position.character, str(h.label)) for h in hints if h.position.line == number), reverse=True)
        line = text
        pieces = []
        for column, label in cuts:
            pieces.insert(0, f'<span class="hint">{html.escape(label)}</span>' + html.escape(line[column:]))
            line = line[:column]
        body = html.escape(line) + "".join(pieces)
        for d in diagnostics:
            if d.range.start.line == number and d.range.start.line == d.range.end.line and not cuts:
                a, b = d.range.start.character, d.range.end.character
                body = html.escape(text[:a]) + f'<span class="squiggle">{html.escape(text[a:b])}</span>'
                body += html.escape(text[b:])
        rows.append(f'<div class="row"><span class="num">{number + 1}</span>{body or "&nbsp;"}</div>')
        if number == HOVER_AT[0] and hover:
            rows.append(f'<div class="popup hover"><b>hover on <code>out</code></b><br>{html.escape(hover)}</div>')
        for d in diagnostics:
            if d.range.start.line == number:
                rows.append(f'<div class="popup diag"><b>[{d.code}]</b> {html.escape(d.message)}</div>')
    return STYLE + '<div class="editor"><div class="title">model.py: typed-xmap lsp</div>' + "".join(rows) + "</div>"


STYLE = """<!doctype html><meta charset="utf-8"><style>
body { background: #1e1e1e; margin: 0; padding: 16px; font-family: 'DejaVu Sans Mono', monospace; font-size: 14px; }
.editor { background: #1e1e1e; color: #d4d4d4; width: 1460px; }
.title { color: #ccc; background: #2d2d2d; padding: 6px 10px; margin-bottom: 8px; font-family: sans-serif; }
.row { white-space: pre; line-height: 22px; }
.num { color: #858585; display: inline-block; width: 36px; text-align: right; margin-right: 16px; }
.hint { color: #8a8a8a; background: #2a2d2e; border-radius: 3px; padding: 0 3px; font-size: 12px; }
.squiggle { text-decoration: underline wavy #f14c4c; }
.popup { margin: 4px 0 6px 52px; padding: 6px 10px; border-radius: 4px; white-space: pre-wrap; max-width: 1300px; }
.hover { background: #252526; border: 1px solid #454545; color: #9cdcfe; }
.diag { background: #3a1d1d; border: 1px solid #f14c4c; color: #f0c0c0; }
</style>"""


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Chromium for the screenshot (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as profile:
        answers = asyncio.run(session(Path(folder)))
        page = Path(folder) / "lsp-session.html"
        page.write_text(render(*answers))
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
        flags += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
        shot = HERE / "lsp-session.png"
        subprocess.run(
            [
                chromium,
                *flags,
                f"--user-data-dir={profile}",
                f"--screenshot={shot}",
                "--window-size=1500,420",
                "--hide-scrollbars",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {shot}")


if __name__ == "__main__":
    main()
