"""A scripted editor against ``typed-xmap lsp`` over stdio (issue 28's language-server fuzz).

Seeded random sessions: ranged edits (statements typed, deleted, an axis renamed, a line cut off half-way
through typing, a broken ``def``), saves, documents closed and opened again, pauses that let a check run
mid-typing, hovers, and mypy's daemon killed. After each scenario every open document's published diagnostics
must equal a fresh ``typed-xmap check`` of its text (the documents import a shared module, not each other), and
every hover must be answered. The counts of what ran are printed (``pytest -s``) and checked to cover each kind.
"""

from __future__ import annotations

import ast
import asyncio
import os
import random
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from lsp_session import VERSIONS, checked, daemons_only, open_document, start, uri_of
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from typed_xmap._tools._lsp._daemon import FLAGS
from typed_xmap._tools._lsp._diagnostics import diagnostics

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc").exists(), reason="finds the daemon to kill through /proc"),
]

SEEDS = [int(seed) for seed in os.environ.get("TYPED_XMAP_LSP_FUZZ_SEEDS", "28 31 32").split()]
"""The sessions run, one per seed (``TYPED_XMAP_LSP_FUZZ_SEEDS="29 30"`` runs others). Seed 31 found mypy's
update leaving a function half-checked (``_dmypy._complete``)."""
SCENARIOS = int(os.environ.get("TYPED_XMAP_LSP_FUZZ_SCENARIOS", "4"))
STEPS = 14
DOCUMENTS = 3
SHAPES = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Tokens = NamedArray[f32, "batch seq embed"]


def embed(x: Tokens) -> Tokens:
    return tnp.relu(x)
"""
HEAD = 7  # lines before the body: imports, a blank line, the def
AXES = ["batch", "seq", "embed", "nope"]
STATEMENTS = [
    "    h = embed(x)",
    '    s = tnp.sum(x, "{axis}")',
    "    r = tnp.relu(x)",
    '    m = tnp.mean(embed(x), "{axis}")',
    '    t: NamedArray[f32, "batch"] = tnp.sum(x, "{axis}")',
]


def _document(index: int, rng: random.Random) -> list[str]:
    body = [rng.choice(STATEMENTS).format(axis=rng.choice(AXES)) for _ in range(rng.randint(1, 3))]
    return [
        "import typed_xmap.numpy as tnp",
        "from typed_xmap import NamedArray, f32",
        "",
        "from shapes import Tokens, embed",
        "",
        "",
        f'def f{index}(x: Tokens) -> NamedArray[f32, "batch seq"]:',
        *body,
        f'    return tnp.sum(x, "{rng.choice(AXES)}")',
    ]


def _text(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


class Oracle:
    """A fresh ``typed-xmap check`` of documents' texts, in a project of its own (the same config and shared
    module, its own mypy cache), with the server's output flags; answers are kept per text. The documents
    import the shared module, not each other: those that parse are checked in one run (mypy stops the whole
    run at a file that does not parse: each such file gets a run of its own)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
        (folder / "shapes.py").write_text(SHAPES)
        self.known: dict[tuple[str, str], list[lsp.Diagnostic]] = {}
        self.stamp = 1_000_000_000
        self.runs = 0

    def check(self, texts: dict[str, str]) -> dict[str, list[lsp.Diagnostic]]:
        """The diagnostics of a fresh check of each file name's text."""
        new = {name: text for name, text in texts.items() if (name, text) not in self.known}
        whole = {name: text for name, text in new.items() if _parses(text)}
        found = self._run(whole) if whole else {}
        if any(d.code == "syntax" for listed in found.values() for d in listed):  # mypy's parser stopped it
            whole = {}
        for name, text in new.items():
            self.known[name, text] = found[name] if name in whole else self._run({name: text})[name]
        return {name: self.known[name, text] for name, text in texts.items()}

    def _run(self, texts: dict[str, str]) -> dict[str, list[lsp.Diagnostic]]:
        for name, text in texts.items():
            (self.folder / name).write_text(text)
            # mypy's cache takes a file of the same size and whole-second mtime for unchanged: a new mtime each time
            self.stamp += 10
            os.utime(self.folder / name, (self.stamp, self.stamp))
        # the server's flags but a daemon's own; mypy's fine-grained dependencies written: the sessions start from
        # this cache
        flags = [*(flag for flag in FLAGS if flag != "--use-fine-grained-cache"), "--cache-fine-grained"]
        command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", *flags, *sorted(texts)]
        run = subprocess.run(command, cwd=self.folder, capture_output=True, text=True, timeout=600, check=False)
        self.runs += 1
        found = diagnostics(run.stdout + run.stderr, self.folder)  # a file that does not parse: errors on stderr
        return {name: found.get((self.folder / name).resolve(), []) for name in texts}


def _parses(text: str) -> bool:
    try:
        compile(text, "<document>", "exec", flags=ast.PyCF_ONLY_AST)
    except SyntaxError:
        return False
    return True


AXIS_LIST = re.compile(r"""(named axes '|NamedArray\[\w+, ")([^'"]*)(['"])""")


def _key(found: list[lsp.Diagnostic]) -> list[tuple[object, ...]]:
    """What is compared of each diagnostic. The plugin names a value's axes in an order that depends on what the
    process checked before (a daemon's history, a fresh check's file): that order is left out."""

    def axes_as_a_set(match: re.Match[str]) -> str:
        return match[1] + " ".join(sorted(match[2].split())) + match[3]

    return sorted(
        (d.range.start.line, d.range.start.character, d.code, AXIS_LIST.sub(axes_as_a_set, d.message)) for d in found
    )


class Editor:
    """The scripted editor: buffers, what is on disk, the open documents, the counts of what it did."""

    def __init__(self, client: LanguageClient, project: Path, rng: random.Random) -> None:
        self.client, self.project, self.rng = client, project, rng
        self.disk = {i: _document(i, rng) for i in range(DOCUMENTS)}
        self.buffers: dict[int, list[str]] = {}
        self.versions: dict[int, int] = {}  # each open document's version, as last sent
        self.counts = Counter[str]()
        self.log: list[str] = []  # what was done, for a failure's report
        for index, lines in self.disk.items():
            (project / f"doc{index}.py").write_text(_text(lines))

    def uri(self, index: int) -> str:
        return uri_of(self.project / f"doc{index}.py")

    def open(self, index: int) -> None:
        self.buffers[index] = list(self.disk[index])
        self.versions[index] = 1
        VERSIONS.get(self.client, {}).pop(self.uri(index), None)  # what was published before it was closed
        open_document(self.client, self.uri(index), _text(self.buffers[index]))
        self.counts["opened"] += 1
        self.log.append(f"open doc{index}")

    def close(self, index: int) -> None:
        del self.buffers[index], self.versions[index]
        self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(self.uri(index))))
        self.counts["closed"] += 1
        self.log.append(f"close doc{index}")

    def save(self, index: int) -> None:
        self.disk[index] = list(self.buffers[index])
        (self.project / f"doc{index}.py").write_text(_text(self.disk[index]))
        self.client.text_document_did_save(lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(self.uri(index))))
        self.counts["saved"] += 1
        self.log.append(f"save doc{index}")

    def change(self, index: int, start: int, end: int, lines: list[str]) -> None:
        """Lines ``start``..``end`` (end excluded) of the buffer become ``lines``: one ranged didChange."""
        self.log.append(f"doc{index} lines {start}-{end} -> {lines}")
        buffer = self.buffers[index]
        buffer[start:end] = lines
        self.versions[index] += 1
        span = lsp.Range(lsp.Position(start, 0), lsp.Position(end, 0))
        change = lsp.TextDocumentContentChangePartial(range=span, text=_text(lines))
        identifier = lsp.VersionedTextDocumentIdentifier(uri=self.uri(index), version=self.versions[index])
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(identifier, [change]))

    def edit(self, index: int, kind: str) -> None:
        rng, buffer = self.rng, self.buffers[index]
        line = rng.randrange(HEAD, len(buffer))
        if kind == "type a statement":
            self.change(index, line, line, [rng.choice(STATEMENTS).format(axis=rng.choice(AXES))])
        elif kind == "delete a line" and len(buffer) > HEAD + 1:
            self.change(index, line, line + 1, [])
        elif kind == "rename an axis":
            old = buffer[line]
            self.change(
                index,
                line,
                line + 1,
                [next((old.replace(f'"{a}"', f'"{rng.choice(AXES)}"') for a in AXES if f'"{a}"' in old), old)],
            )
        elif kind == "half-typed line":
            self.change(index, line, line + 1, [buffer[line][: rng.randrange(5, max(6, len(buffer[line])))]])
        elif kind == "broken def":
            self.change(index, line, line, ["def ("])
        else:
            return
        self.counts[kind] += 1

    async def hover(self, index: int) -> None:
        line = self.rng.randrange(len(self.buffers[index]))
        params = lsp.HoverParams(lsp.TextDocumentIdentifier(self.uri(index)), lsp.Position(line, 5))
        async with asyncio.timeout(600):  # the server stays responsive, whatever the buffers hold
            await self.client.text_document_hover_async(params)
        self.counts["hovers"] += 1

    def kill_daemon(self) -> None:
        for pid in daemons_only(self.project):
            os.kill(pid, signal.SIGKILL)
            self.counts["daemons killed"] += 1
            self.log.append("daemon killed")

    async def step(self) -> None:
        rng, open_ = self.rng, sorted(self.buffers)
        closed = [i for i in range(DOCUMENTS) if i not in self.buffers]
        action = rng.choices(["edit", "save", "close", "open", "kill", "hover", "pause"], [50, 8, 7, 10, 4, 10, 11])[0]
        if action == "open" and closed:
            self.open(rng.choice(closed))
        elif action == "close" and len(open_) > 1:
            self.close(rng.choice(open_))
        elif action == "save" and open_:
            self.save(rng.choice(open_))
        elif action == "kill":
            self.kill_daemon()
        elif action == "hover" and open_:
            await self.hover(rng.choice(open_))
        elif action == "pause":  # typing stops until the diagnostics are the buffers': a check mid-typing
            await self.checked()
            self.counts["pauses"] += 1
            self.log.append("pause")
        elif open_:
            kinds = ["type a statement", "delete a line", "rename an axis", "half-typed line", "broken def"]
            self.edit(rng.choice(open_), rng.choices(kinds, [30, 15, 25, 20, 10])[0])

    async def checked(self) -> None:
        """Until every open document's diagnostics were published for the version last sent (its text)."""
        await checked(self.client, {self.uri(index): version for index, version in self.versions.items()})

    async def compare(self, oracle: Oracle) -> None:
        """Each open document's diagnostics, once published for its latest version, against a fresh check of
        its text; a hover of each answers on that text."""
        await self.checked()
        for index in sorted(self.buffers):
            await self.hover(index)
        texts = {index: _text(buffer) for index, buffer in sorted(self.buffers.items())}
        fresh = oracle.check({f"doc{index}.py": text for index, text in texts.items()})
        for index, text in texts.items():
            expected = fresh[f"doc{index}.py"]
            published = self.client.diagnostics.get(self.uri(index), [])
            if _key(published) != _key(expected):
                Path(os.environ.get("LSP_FUZZ_FAILED", os.devnull)).write_text("\n".join([*self.log, text]))
            assert _key(published) == _key(expected), (text, published, expected)
            self.counts["documents compared"] += 1
            self.counts["with a syntax error"] += any(d.code == "syntax" for d in expected)
            self.counts["with a type error"] += any(d.code not in (None, "syntax") for d in expected)


async def _fuzz(project: Path, oracle: Oracle, seed: int) -> Counter[str]:
    client = await start(project)
    editor = Editor(client, project, random.Random(seed))
    try:
        editor.open(0)
        for scenario in range(SCENARIOS):
            for _ in range(STEPS):
                await editor.step()
            if scenario % 2 == 0:  # every other scenario ends mid-typing: a document that does not parse
                editor.edit(min(editor.buffers), "broken def")
            await editor.compare(oracle)
            editor.counts["scenarios"] += 1
        assert client._server is not None and client._server.returncode is None
    finally:
        await client.shutdown_session()
        await client.stop()
    return editor.counts


def test_a_scripted_editor_against_fresh_checks(tmp_path: Path) -> None:
    """Each seed's session in a project of its own, started warm from the cache the oracle's first check left
    (the same config and shared module): no session pays for a cold start of mypy's daemon."""
    scratch = tmp_path / "oracle"
    scratch.mkdir()
    oracle = Oracle(scratch)
    oracle.check({"shapes.py": SHAPES})
    counts = Counter[str]()
    for seed in SEEDS:
        project = tmp_path / f"project-{seed}"
        project.mkdir()
        (project / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
        (project / "shapes.py").write_text(SHAPES)
        shutil.copytree(scratch / ".mypy_cache", project / ".mypy_cache")
        counts += asyncio.run(_fuzz(project, oracle, seed))
    print("language-server fuzz:", dict(sorted(counts.items())), "oracle runs:", oracle.runs)
    assert counts["scenarios"] == SCENARIOS * len(SEEDS)
    for kind in ("with a syntax error", "with a type error", "opened", "closed", "saved", "daemons killed"):
        assert counts[kind] > 0, (kind, counts)
