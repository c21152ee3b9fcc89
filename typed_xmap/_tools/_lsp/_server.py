"""The language server (pygls): diagnostics on open and save, hover and inlay hints of named shapes.

Every answer comes from mypy's daemon with the plugin (``_daemon.Daemon``), which checks the files on disk:
diagnostics follow each open and save; hover and inlay hints read the types of the last check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ._daemon import Daemon
from ._diagnostics import diagnostics
from ._format import format_type, is_type
from ._locations import parameter_use, unannotated_targets


class TypedXmapServer(LanguageServer):
    """The server's state: the daemon (started on the first check) and the files it checks."""

    def __init__(self) -> None:
        super().__init__("typed-xmap", "0.1.0")
        self.daemon: Daemon | None = None
        self.files: set[str] = set()
        self.published: set[str] = set()

    def project(self) -> Daemon:
        if self.daemon is None:
            self.daemon = Daemon(Path(self.workspace.root_path or Path.cwd()))
        return self.daemon

    def path(self, uri: str) -> str:
        return str(Path(to_fs_path(uri) or uri).resolve())

    async def check(self) -> None:
        """Check the open files and publish every file's diagnostics (an empty list clears a fixed file)."""
        daemon = self.project()
        report = await asyncio.to_thread(daemon.check, sorted(self.files))
        found = diagnostics(report, daemon.root)
        for path in self.published | {str(p) for p in found} | self.files:
            uri = from_fs_path(path) or path
            listed = found.get(Path(path), [])
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=listed))
        self.published = {str(p) for p in found}

    async def types_at(self, location: str) -> list[str]:
        """The types dmypy reports at ``location`` (``path:line:col[:end_line:end_col]``), as shown."""
        answers = await asyncio.to_thread(self.project().inspect, location)
        return [format_type(answer) for answer in answers if is_type(answer)]


server = TypedXmapServer()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: TypedXmapServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.files.add(ls.path(params.text_document.uri))
    await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: TypedXmapServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.files.add(ls.path(params.text_document.uri))
    await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TypedXmapServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.files.discard(ls.path(params.text_document.uri))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: TypedXmapServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """The type of the innermost expression at the cursor; on a parameter, its type where the body uses it."""
    path = ls.path(params.text_document.uri)
    line, column = params.position.line + 1, params.position.character + 1
    source = ls.workspace.get_text_document(params.text_document.uri).source
    use = parameter_use(source, line, column)
    # a position (not a span) answers with every enclosing expression, innermost first
    shown = await ls.types_at(use.location(path) if use else f"{path}:{line}:{column}")
    if not shown:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=f"```python\n{shown[0]}\n```"))


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
async def inlay_hints(ls: TypedXmapServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    """``: NamedArray[...]`` after each name an unannotated assignment binds to a NamedArray, in range."""
    path = ls.path(params.text_document.uri)
    source = ls.workspace.get_text_document(params.text_document.uri).source
    first, last = params.range.start.line + 1, params.range.end.line + 1
    hints = []
    for span in unannotated_targets(source):
        if not first <= span.line <= last:
            continue
        shown = await ls.types_at(span.location(path))
        if shown and "NamedArray" in shown[0] and not shown[0].startswith("type["):  # not an alias's class
            position = lsp.Position(span.end_line - 1, span.end_column)
            hints.append(lsp.InlayHint(position=position, label=f": {shown[0]}", kind=lsp.InlayHintKind.Type))
    return hints


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: TypedXmapServer, params: None) -> None:
    if ls.daemon is not None:
        ls.daemon.close()
