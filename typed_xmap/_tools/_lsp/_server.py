"""The language server (pygls): diagnostics, hover and inlay hints of named shapes, on the editor's buffers.

Every answer comes from mypy's daemon with the plugin (``_daemon.Daemon``), which reads an open file's
unsaved buffer through its shadow (``_shadows``). Diagnostics follow each open, edit (debounced: a pause of
``DEBOUNCE_S`` in typing) and save; hover and inlay hints wait for the check of the latest edit, so the
types they show are the buffer's.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from ._daemon import Daemon, DaemonError
from ._diagnostics import diagnostics
from ._locations import parameter_use, unannotated_targets
from ._report import COMM

DEBOUNCE_S = 0.15
"""An edit is checked once typing pauses this long; each later edit restarts the wait."""


class TypedXmapServer(LanguageServer):
    """The server's state: the daemon (started on the first check), the documents it checks (each file's path
    and the URI the editor named it by), the checks to come."""

    def __init__(self) -> None:
        super().__init__("typed-xmap", "0.1.0")
        self.daemon: Daemon | None = None
        self.documents: dict[str, str] = {}
        self.published: set[str] = set()
        self.checking = asyncio.Lock()  # one check at a time, in the order asked
        self.stale = False  # an edit no check has started to read yet
        self.timer: asyncio.TimerHandle | None = None
        self.later: asyncio.Future[None] | None = None
        self.shut_down = False  # the editor asked for a shutdown before the exit (exit code 0, else 1)

    def project(self) -> Daemon:
        if self.daemon is None:
            self.daemon = Daemon(self.roots()[0])
        return self.daemon

    def roots(self) -> list[Path]:
        """The workspace's folders, the root first (the server's working directory when the editor gave none)."""
        folders = [to_fs_path(folder.uri) for folder in self.workspace.folders.values()]
        found = [Path(path).resolve() for path in [self.workspace.root_path, *folders] if path]
        return found or [Path.cwd().resolve()]

    def path(self, uri: str) -> str:
        return str(Path(to_fs_path(uri) or uri).resolve())

    def uri(self, path: str) -> str:
        """The URI the editor opened ``path`` by (``..`` segments and all), else the file's own."""
        return self.documents.get(path) or from_fs_path(path) or path

    def checks(self, document: lsp.TextDocumentItem) -> bool:
        """Whether ``document`` is one mypy checks: a Python file of the workspace, on disk (not untitled)."""
        path = Path(self.path(document.uri))
        return (
            document.language_id == "python"
            and path.suffix in (".py", ".pyi")
            and path.is_file()
            and any(path.is_relative_to(root) for root in self.roots())
        )

    def track(self, uri: str, *, buffer: bool) -> None:
        """mypy reads ``uri`` as the editor's buffer, or (``buffer=False``: saved) as on disk, with ``COMM``,
        from the next check on; a closed file from disk (each check sends the daemon the shadows: no restart,
        nothing to wait for)."""
        path = Path(self.path(uri))
        text: str | None = None
        if buffer:  # the latest text, whichever edit's handler runs last
            text = self.workspace.get_text_document(uri).source
        elif str(path) in self.documents:  # saved: what is on disk
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8")
        if text is not None:
            self.project().shadows.hold(path, text + COMM)
        else:
            self.project().shadows.release(path)
        self.stale = True  # for the check the caller asks for next

    def close(self) -> None:
        """Stop mypy's daemon and remove the session's folder (also on an exit without shutdown, or SIGTERM)."""
        if self.daemon is not None:
            self.daemon.close()

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
        """Publish for each checked document (one opened meanwhile waits for its own check) and each file with
        messages now or at the last check. A document's diagnostics carry the version the check started from
        (it may have read a later edit's text, whose own check follows): an editor, or a test, waits for the
        version it sent, never for a pause."""
        daemon = self.project()
        checked = sorted(self.documents)
        # each document's version now: the text mypy reads is this one's or (an edit meanwhile) a later one's
        versions = {path: self.workspace.get_text_document(self.documents[path]).version for path in checked}
        try:
            report = await asyncio.to_thread(daemon.check, checked)
        except DaemonError as error:
            if not daemon.closed:  # else the editor shut the server down meanwhile
                # shown, whichever handler or timer asked for the check; the diagnostics stay as they were
                message = f"typed-xmap: the check failed, diagnostics are not updated: {error}"
                self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Error, message))
            return
        found = diagnostics(report, daemon.root)
        for path in self.published | {str(p) for p in found} | set(checked):
            listed = found.get(Path(path), [])
            params = lsp.PublishDiagnosticsParams(uri=self.uri(path), diagnostics=listed, version=versions.get(path))
            self.text_document_publish_diagnostics(params)
        self.published = {str(p) for p in found}
        if not daemon.exported:  # the diagnostics came from the cache: now the open files are checked
            self.check_soon()

    async def types_at(self, location: str) -> list[str]:
        """The types dmypy reports at ``location`` (``path:line:col[:end_line:end_col]``), as shown."""
        from ._format import format_type, is_type  # the plugin's formatter: imported by the first hover, not at start

        answers = await asyncio.to_thread(self.project().inspect, location)
        return [format_type(answer) for answer in answers if is_type(answer)]


server = TypedXmapServer()


@server.feature(lsp.INITIALIZED)
def initialized(ls: TypedXmapServer, params: lsp.InitializedParams) -> None:
    """A daemon started early for another folder than the workspace's root is replaced."""
    if ls.daemon is not None and ls.daemon.root != ls.roots()[0]:
        ls.daemon.close()
        ls.daemon = None


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: TypedXmapServer, params: lsp.DidOpenTextDocumentParams) -> None:
    """A Python document of the workspace is checked from now on (anything else the server leaves alone)."""
    if ls.checks(params.text_document):
        ls.documents[ls.path(params.text_document.uri)] = params.text_document.uri
        ls.track(params.text_document.uri, buffer=True)
        await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TypedXmapServer, params: lsp.DidChangeTextDocumentParams) -> None:
    """An unsaved edit: mypy reads the buffer (pygls has applied the change) once typing pauses."""
    if ls.path(params.text_document.uri) not in ls.documents:
        return
    ls.track(params.text_document.uri, buffer=True)  # from now on a hover waits for this edit's check
    ls.check_soon()


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: TypedXmapServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """Saved: what is on disk is what was saved (also when no edit reached the server before the save)."""
    if ls.path(params.text_document.uri) in ls.documents:
        ls.track(params.text_document.uri, buffer=False)
        await ls.check()


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: TypedXmapServer, params: lsp.DidCloseTextDocumentParams) -> None:
    """Closed (unsaved edits dropped): mypy reads the file from disk again, for the files still open."""
    path = ls.path(params.text_document.uri)
    if path not in ls.documents:
        return
    del ls.documents[path]
    ls.track(params.text_document.uri, buffer=False)
    if ls.documents:
        ls.check_soon()
    else:
        ls.stale = False  # nothing left to check


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def hover(ls: TypedXmapServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """The type of the innermost expression at the cursor; on a parameter, its type where the body uses it."""
    path = ls.path(params.text_document.uri)
    if path not in ls.documents:
        return None
    await ls.settled()
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
    if path not in ls.documents:
        return []
    await ls.settled()
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
    ls.shut_down = True
    ls.close()


@server.feature(lsp.EXIT)
def exit_(ls: TypedXmapServer, params: None) -> None:
    """Before pygls ends the loop: a check in flight then ends at once (its daemon is gone), not when done."""
    ls.close()
