"""The language server (pygls): diagnostics, hover and inlay hints of named shapes, on the editor's buffers.

Every answer comes from mypy's daemon with the plugin (``_daemon.Daemon``), which reads an open file's
unsaved buffer through its shadow (``_shadows``). Diagnostics follow each open, edit (debounced: a pause of
``DEBOUNCE_S`` in typing) and save; hover and inlay hints wait for the check of the latest edit, so the
types they show are the buffer's.
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

DEBOUNCE_S = 0.15
"""An edit is checked once typing pauses this long; each later edit restarts the wait."""


class TypedXmapServer(LanguageServer):
    """The server's state: the daemon (started on the first check), the files it checks, the checks to come."""

    def __init__(self) -> None:
        super().__init__("typed-xmap", "0.1.0")
        self.daemon: Daemon | None = None
        self.files: set[str] = set()
        self.published: set[str] = set()
        self.checking = asyncio.Lock()  # one check at a time, in the order asked
        self.stale = False  # an edit no check has started to read yet
        self.timer: asyncio.TimerHandle | None = None
        self.later: asyncio.Future[None] | None = None

    def project(self) -> Daemon:
        if self.daemon is None:
            self.daemon = Daemon(Path(self.workspace.root_path or Path.cwd()))
        return self.daemon

    def path(self, uri: str) -> str:
        return str(Path(to_fs_path(uri) or uri).resolve())

    async def track(self, uri: str, *, buffer: bool) -> bool:
        """mypy reads ``uri`` as the editor's buffer, or (``buffer=False``: saved, closed) from disk; ``False``
        for a buffer with no file (an untitled one), which mypy cannot check."""
        path = Path(self.path(uri))
        if not path.is_file():
            return False
        daemon = self.project()
        if not daemon.shadows.covers(path):  # a new file: the daemon restarts (waiting for a check in flight)
            await asyncio.to_thread(daemon.watch, path)
        if buffer:  # read after the wait: the latest text, whichever edit's handler gets here last
            daemon.shadows.hold(path, self.workspace.get_text_document(uri).source)
        else:
            daemon.shadows.follow_disk(path)
        return True

    def check_soon(self) -> None:
        """Check once typing pauses (``DEBOUNCE_S`` after the last edit)."""
        if self.timer is not None:
            self.timer.cancel()
        self.stale = True
        self.timer = asyncio.get_running_loop().call_later(DEBOUNCE_S, self._check_later)

    def _check_later(self) -> None:
        self.later = asyncio.ensure_future(self.check())  # held: a task nobody references may be collected

    async def settled(self) -> None:
        """Wait until the latest edit has been checked (hover and hints then read the buffer's types)."""
        while self.stale or self.checking.locked():
            await asyncio.sleep(0.02)

    async def check(self) -> None:
        """Check the open files and publish every file's diagnostics (an empty list clears a fixed file)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.stale = True
        async with self.checking:
            if not self.stale:
                return  # a check that started after this one was asked has read the same buffers
            self.stale = False
            await self._check()

    async def _check(self) -> None:
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
    if await ls.track(params.text_document.uri, buffer=True):
        ls.files.add(ls.path(params.text_document.uri))
        await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TypedXmapServer, params: lsp.DidChangeTextDocumentParams) -> None:
    """An unsaved edit: mypy reads the buffer (pygls has applied the change) once typing pauses."""
    ls.stale = True  # from now on a hover waits for this edit's check
    try:
        await ls.track(params.text_document.uri, buffer=True)
    finally:
        ls.check_soon()


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: TypedXmapServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """Saved: what is on disk is what was saved (also when no edit reached the server before the save)."""
    if await ls.track(params.text_document.uri, buffer=False):
        ls.files.add(ls.path(params.text_document.uri))
        await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: TypedXmapServer, params: lsp.DidCloseTextDocumentParams) -> None:
    """Closed (unsaved edits dropped): mypy reads the file from disk again, for the files still open."""
    await ls.track(params.text_document.uri, buffer=False)
    ls.files.discard(ls.path(params.text_document.uri))
    if ls.files:
        ls.check_soon()


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: TypedXmapServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """The type of the innermost expression at the cursor; on a parameter, its type where the body uses it."""
    await ls.settled()
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
    await ls.settled()
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
