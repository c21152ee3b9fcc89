"""The language-server tests' client: pytest-lsp's LSP client (on pygls) driving ``typed-xmap lsp`` over stdio,
and what the tests ask of it (diagnostics after notifications, hovers, edits, the mypy daemons running)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER = [sys.executable, "-m", "typed_xmap._tools._cli", "lsp"]
Point = tuple[int, int]
INITIALIZED: dict[LanguageClient, lsp.InitializeResult] = {}
VERSIONS: dict[LanguageClient, dict[str, int | None]] = {}
"""The version each client's latest diagnostics of a URI were published for (the server's check started from)."""
SENT: dict[LanguageClient, dict[str, int]] = {}
"""The version of each URI's text each client sent last (``open_document``, ``edit``, ``replace``)."""


def _client() -> LanguageClient:
    """pytest-lsp's test client, which also keeps the version of each URI's latest diagnostics."""

    def publish(client: LanguageClient, params: lsp.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        VERSIONS.setdefault(client, {})[params.uri] = params.version

    client = LanguageClient(converter_factory=default_converter)
    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


async def start(project: Path, env: dict[str, str] | None = None) -> LanguageClient:
    """A server started in ``project`` (its workspace), initialized as VS Code would (its answer to
    ``initialize``: ``INITIALIZED[client]``)."""
    client = _client()
    await client.start_io(*SERVER, cwd=str(project), env=env)
    result = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=uri_of(project),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(project), name="project")],
        )
    )
    assert result.server_info is not None and result.server_info.name == "typed-xmap"
    INITIALIZED[client] = result
    return client


async def diagnostics(client: LanguageClient, uri: str, *send: Callable[[], None]) -> list[lsp.Diagnostic]:
    """The diagnostics published for ``uri`` after the notifications ``send`` sends. (The client keeps the
    latest per file: a check publishes for every open file at once, too fast to await one notification each.)"""
    return (await published(client, [uri], *send))[uri]


async def published(
    client: LanguageClient, uris: list[str], *send: Callable[[], None]
) -> dict[str, list[lsp.Diagnostic]]:
    """The diagnostics published for each of ``uris`` after ``send``, for the version of its text sent last
    (a check of an earlier version that ends meanwhile is not taken)."""
    for uri in uris:
        client.diagnostics.pop(uri, None)
    for notify in send:
        notify()
    sent, versions = SENT.get(client, {}), VERSIONS.setdefault(client, {})
    async with asyncio.timeout(600):
        while not all(uri in client.diagnostics and versions.get(uri) == sent.get(uri, versions[uri]) for uri in uris):
            _no_failed_check(client)
            await asyncio.sleep(0.02)
    return {uri: list(client.diagnostics[uri]) for uri in uris}


async def checked(client: LanguageClient, versions: dict[str, int]) -> None:
    """Wait until each URI's diagnostics were published for its version in ``versions`` (the one last sent):
    a check of exactly those texts, however long it takes (no pause decides what was checked)."""
    async with asyncio.timeout(600):
        while any(VERSIONS.get(client, {}).get(uri) != version for uri, version in versions.items()):
            _no_failed_check(client)
            await asyncio.sleep(0.02)


def _no_failed_check(client: LanguageClient) -> None:
    """A check that failed publishes nothing: the server's message (its traceback) fails the test at once, where
    waiting for the diagnostics would take the whole timeout."""
    failed = [m.message for m in client.messages if m.type == lsp.MessageType.Error]
    assert not failed, failed


async def hover(client: LanguageClient, uri: str, line: int, character: int) -> str:
    params = lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, character))
    answer = await client.text_document_hover_async(params)
    assert answer is not None
    assert isinstance(answer.contents, lsp.MarkupContent)
    return answer.contents.value


def open_document(client: LanguageClient, uri: str, text: str, language: str = "python") -> None:
    item = lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
    SENT.setdefault(client, {})[uri] = 1
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))


def edit(client: LanguageClient, uri: str, version: int, start: Point, end: Point, text: str) -> None:
    """An unsaved edit: ``text`` replaces the buffer's range ``start``-``end`` (0-based line, character)."""
    span = lsp.Range(lsp.Position(*start), lsp.Position(*end))
    change = lsp.TextDocumentContentChangePartial(range=span, text=text)
    identifier = lsp.VersionedTextDocumentIdentifier(uri=uri, version=version)
    SENT.setdefault(client, {})[uri] = version
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(identifier, [change]))


def replace(client: LanguageClient, uri: str, version: int, text: str) -> None:
    """An unsaved edit that replaces the whole buffer."""
    identifier = lsp.VersionedTextDocumentIdentifier(uri=uri, version=version)
    change = lsp.TextDocumentContentChangeWholeDocument(text=text)
    SENT.setdefault(client, {})[uri] = version
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(identifier, [change]))


def daemon_pids(project: Path) -> list[int]:
    """The server's children (mypy daemons, cache writers) whose working directory is ``project``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if b"typed_xmap._tools._lsp._launch" in command and cwd == str(project):
            pids.append(int(proc.name))
    return pids


def daemons_only(project: Path) -> list[int]:
    """The mypy daemons among ``daemon_pids`` (not the cache writer)."""
    found = []
    for pid in daemon_pids(project):
        try:
            if b"daemon" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            continue
    return found
