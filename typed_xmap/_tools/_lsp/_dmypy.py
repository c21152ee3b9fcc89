"""mypy's daemon as the language server runs it: dmypy's ``Server`` with what an editor needs besides.

- **Buffers while it runs.** Each ``check`` carries the map of shadows (a file -> the file holding the
  editor's unsaved buffer; any other file is read from disk). mypy's own ``--shadow-file`` map is fixed when
  its build starts; here the build's map is changed in place, and the file watcher forgets what it knew of a
  file whose shadow changed, so the check reads it again: a file created after the daemon started costs an
  incremental update.
- **No file blocks the others.** A file mypy stops at (a syntax error half-way through typing, a blocking
  error) gets its own messages, and the check goes on as if it held the last text of it that did not block
  (its imports alone for a file never seen whole): every other file keeps its diagnostics, and hovers answer.
- **A start from mypy's cache** (``--use-fine-grained-cache``; the server's cache writer, ``typed-xmap check
  --cache-fine-grained``, writes that cache): mypy loads the modules the cache holds without checking them,
  then checks what changed. It replays none of the cached modules' errors: they are sent with that first
  answer, and the next check checks those modules and the files asked for (whose types hovers read).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from mypy.build import Graph, State
from mypy.dmypy_server import CONNECTION_NAME, Server
from mypy.dmypy_util import receive, send
from mypy.errorcodes import POSSIBLY_UNDEFINED, USED_BEFORE_DEF
from mypy.errors import Errors
from mypy.find_sources import InvalidSourceList, create_source_list
from mypy.fswatcher import FileData
from mypy.ipc import IPCServer
from mypy.modulefinder import BuildSource
from mypy.nodes import ClassDef, Decorator, FuncDef, MypyFile, OverloadedFuncDef, Statement
from mypy.options import Options
from mypy.parse import parse
from mypy.server.update import FineGrainedBuildManager, propagate_changes_using_dependencies

from ._report import COMM, MESSAGE

UNDEFINED = (USED_BEFORE_DEF, POSSIBLY_UNDEFINED)


class EditorServer:
    """dmypy's server (``mypy``: compiled, so wrapped, not subclassed) with the shadows of each check, blocking
    files set aside, and errors kept from the cache."""

    def __init__(self, options: Options, status_file: str, folder: Path) -> None:
        self.mypy = Server(options, status_file, timeout=None)
        self.options = options
        self.status_file = status_file
        self.folder = folder  # where the text a blocked file is read as goes
        self.shadows = {source: shadow for source, shadow in options.shadow_file or []}
        self.applied = dict(self.shadows)  # the map the build reads through
        self.good: dict[str, str] = {}  # a checked file's last text no check stopped at
        self.reread: set[str] = set()  # files whose text mypy must read again

    def serve(self) -> None:
        """Answer requests one at a time (dmypy's protocol: a JSON object each way) until ``stop``."""
        server = IPCServer(CONNECTION_NAME, None)
        Path(self.status_file).write_text(json.dumps({"pid": os.getpid(), "connection_name": server.connection_name}))
        try:
            command = None
            while command != "stop":
                with server:
                    data = receive(server)
                    command = data.pop("command", None)
                    try:
                        response = self.run(str(command), data)
                    except Exception:  # the client gets the traceback, the daemon's log too; the daemon goes on
                        response = {"error": "Daemon crashed!\n" + traceback.format_exc()}
                        print(response["error"], file=sys.stderr, flush=True)
                    with contextlib.suppress(OSError):  # the client may have hung up
                        send(server, {**response, "final": True})
        finally:
            Path(self.status_file).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                server.cleanup()

    def run(self, command: str, data: dict[str, Any]) -> dict[str, Any]:
        if command == "check":
            self.follow(dict(data.pop("shadows", [])))
            try:
                sources = create_source_list(data["files"], self.options, self.mypy.fscache)
            except InvalidSourceList as error:
                return {"out": "", "err": str(error), "status": 2}
            return self.check(sources, data["export_types"], data["is_tty"], data["terminal_width"])
        response: dict[str, Any] = self.mypy.run_command(command, data)
        return response

    def follow(self, shadows: dict[str, str]) -> None:
        """From this check on, mypy reads each file of ``shadows`` (absolute paths) from its shadow, any other
        from disk; a file whose shadow changed is read again."""
        self.reread |= {path for path in {*shadows, *self.shadows} if shadows.get(path) != self.shadows.get(path)}
        self.shadows = shadows

    def check(
        self, sources: list[BuildSource], export_types: bool, is_tty: bool, terminal_width: int
    ) -> dict[str, Any]:
        """dmypy's check; a file that blocks it is set aside (``masks``) and the check run again."""
        read = {os.path.realpath(source.path): source.path for source in sources if source.path}
        read.update(self.shadows)
        seen = {path: _text(where) for path, where in read.items()}  # what this check reads of each file
        # a file checked that does not parse is set aside before mypy reads it: its fine-grained update never stops
        # there (after such a stop, an update in which another file leaves the build can define a function twice)
        blocked = {path: rows for path, text in seen.items() if (rows := syntax_errors(path, _own(text), self.options))}
        masks = {path: self._mask(path, seen.get(path)) for path in blocked}
        while True:
            self._apply(masks)
            result = self._check(sources, export_types, is_tty, terminal_width)
            found = {path: rows for path, rows in _blockers(self.mypy, result).items() if path not in masks}
            if not found:
                break
            blocked.update(found)
            for path in found:
                masks[path] = self._mask(path, seen.get(path))
        self.good.update({path: text for path, text in seen.items() if path not in blocked and text is not None})
        if blocked:  # each file set aside shows its own messages, not those of the text it was read as
            rows = [row for row in str(result["out"]).splitlines() if _file(row) not in masks]
            result["out"] = "".join(f"{row}\n" for row in [*(r for b in blocked.values() for r in b), *rows])
            result["status"] = max(int(result.get("status", 1)), 1)
        return result

    def _check(self, sources: list[BuildSource], export_types: bool, is_tty: bool, width: int) -> dict[str, Any]:
        before = self.mypy.fine_grained_manager
        if before is not None and _dangling(before.graph):  # an update left it: the next would fail there
            return self._rebuilt(sources, export_types, is_tty, width)
        erred = set(before.previous_targets_with_errors) if before is not None else set()
        try:
            result = self.mypy.check(sources, export_types, is_tty, width)
        except KeyError:
            if before is None or not _dangling(before.graph):
                raise
            return self._rebuilt(sources, export_types, is_tty, width)
        manager = self.mypy.fine_grained_manager
        if before is not None and manager is not None:
            return _complete(self.mypy, result, sources, export_types, (is_tty, width), erred)
        if manager is None:
            return result
        answer, replayed = _from_cache(manager, result, self.shadows)
        _forget(self.mypy, replayed)  # checked again at the next check
        return answer

    def _rebuilt(self, sources: list[BuildSource], export_types: bool, is_tty: bool, width: int) -> dict[str, Any]:
        """The check made by a new build, not from mypy's cache. mypy's update never adds a stdlib module that a
        change newly imports (mypy#10047: ``import ctypes`` typed into a file): the build names a module it
        lacks, and that update and every one after stop at it (``KeyError: 'ctypes'``). A start from the cache
        fails the same way (the cache's text of the file lacks the import, its update adds it)."""
        options = self.mypy.options
        self.mypy.fine_grained_manager = None
        cached, options.use_fine_grained_cache = options.use_fine_grained_cache, False
        try:
            return self._check(sources, export_types, is_tty, width)
        finally:
            options.use_fine_grained_cache = cached

    def _apply(self, masks: dict[str, str]) -> None:
        """Have the build read each file through its shadow or mask; a file whose text changed is read again."""
        mapping = {**self.shadows, **masks}
        self.reread |= {path for path in {*mapping, *self.applied} if mapping.get(path) != self.applied.get(path)}
        self.applied = mapping
        self.options.shadow_file = [[source, shadow] for source, shadow in mapping.items()]
        if self.mypy.fine_grained_manager is None:
            self.reread.clear()  # the first build reads every file
            return
        build = self.mypy.fine_grained_manager.manager
        build.shadow_map = dict(mapping)
        build.shadow_equivalence_map.clear()
        _forget(self.mypy, self.reread)
        self.reread.clear()

    def _mask(self, path: str, blocked: str | None) -> str:
        """A file holding what mypy reads for the blocked ``path``: its last text that did not block, or (a file
        this daemon never saw whole: one started mid-typing) the imports of its ``blocked`` text that parse. The
        modules it imports stay in the build: an empty module dropped them, and the next check, the file
        whole, loaded each again in an update of its own (minutes). A new text gets a new file (mypy reads a
        file again when its shadow changes)."""
        text = self.good[path] if path in self.good else _imports(blocked or "")
        mask = self.folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}-{Path(path).name}"
        if not mask.exists():
            mask.write_text(text, encoding="utf-8")
        return str(mask)


def _from_cache(
    manager: FineGrainedBuildManager, result: dict[str, Any], shadows: dict[str, str]
) -> tuple[dict[str, Any], set[str]]:
    """A first check's answer, with the count of modules no cache held; for a build started from the cache,
    with the errors of the modules it loaded (mypy replays none), and those modules' real paths."""
    graph = manager.graph
    stale = [state for state in graph.values() if state.meta is None]
    if len(graph) == len(stale):
        result["uncached"] = len(stale)
        return result, set()
    # the files the editor holds are read from its buffers, with an option of their own (the server's
    # named-comm): no cache holds them, and a cache writer would not change that
    result["uncached"] = sum(1 for state in stale if os.path.realpath(state.xpath) not in shadows)
    # started from the cache: mypy replays none of its errors, and exports no type of a file it did not check.
    # The errors of the modules it loaded go with this answer; the next check checks those modules and the
    # files ("exported": no types yet, for hovers)
    build, rows = manager.manager, str(result["out"]).splitlines()
    checked = {_file(row) for row in rows}
    errored = [state for state in graph.values() if state.meta is not None and state.error_lines]
    for state in errored:
        if os.path.realpath(state.xpath) not in checked:
            where = build.errors.simplify_path(state.xpath)
            rows += build.errors.format_messages(where, state.error_lines, formatter=build.error_formatter)
    replayed = {os.path.realpath(state.xpath) for state in errored}
    return {**result, "out": "".join(f"{row}\n" for row in rows), "exported": False}, replayed


def _forget(mypy: Server, paths: set[str]) -> None:
    """The file watcher reports ``paths`` (real paths) changed at the next check: mypy reads them again."""
    for watched in mypy.fswatcher.dump_file_data():
        if os.path.realpath(watched) in paths:
            mypy.fswatcher.set_file_data(watched, FileData(st_mtime=-1.0, st_size=-1, hash=""))


def _complete(
    mypy: Server,
    result: dict[str, Any],
    sources: list[BuildSource],
    export_types: bool,
    terminal: tuple[bool, int],
    erred: set[str],
) -> dict[str, Any]:
    """An update's answer with the messages a full check gives. mypy's update (its daemon's) loses two kinds:

    - a changed file's update runs one deferred pass where a full check runs them until none is left: a
      function deferred twice (a name used before its definition) was left half-checked, its errors (``Missing
      return statement``, ``Cannot determine type``) missing. The changed files' functions are checked again
      as mypy checks the targets an update reaches (every pass, the types kept for ``inspect``);
    - its ``used-before-def`` pass runs for the last file it changed only (each file's update clears every
      message; the others' come back by checking their targets again, which runs no such pass): it is run
      again for each file updated or with messages before the update (``erred``: the targets that had them).
    """
    manager = mypy.fine_grained_manager
    if manager is None or manager.blocking_error is not None or not manager.updated_modules:
        return result
    graph, build = manager.graph, manager.manager
    updated = [state for m in manager.updated_modules if (state := _user_module(m, graph, build.modules)) is not None]
    targets = {target for state in updated for target in _functions(build.modules[state.id].defs)}
    kept, build.options.export_types = build.options.export_types, build.options.export_types or export_types
    try:
        # each function's messages are cleared and made again. The update formatted every file's messages
        # ("flushed": no message may join them): all are formatted again
        build.errors.flushed_files.clear()
        changed = propagate_changes_using_dependencies(build, graph, manager.deps, set(), set(), targets, [])
        for state in {*updated, *(s for t in erred if (s := _user_module(_module_of(t, graph), graph, build.modules)))}:
            _undefined_names(build.errors, state)
        manager.previous_targets_with_errors = build.errors.targets()
        manager.previous_messages = build.errors.new_messages().copy()
        messages = manager.update(changed, [])
    finally:
        build.options.export_types = kept
    return {**result, **mypy.increment_output(messages, sources, *terminal)}


def _blockers(mypy: Server, result: dict[str, Any]) -> dict[str, list[str]]:
    """The messages of each file the check stopped at, by absolute path."""
    manager = mypy.fine_grained_manager
    if manager is not None and manager.blocking_error is None:
        return {}
    rows = f"{result.get('out', '')}{result.get('err', '')}".splitlines()
    if manager is not None:  # an update stops at one module
        assert manager.blocking_error is not None
        path = os.path.realpath(manager.blocking_error[1])
        return {path: [row for row in rows if _file(row) == path]}
    if result.get("status") != 2:
        return {}
    found: dict[str, list[str]] = {}  # the first build stopped: the files it names
    for row in rows:
        named = _file(row)
        if named is not None:
            found.setdefault(named, []).append(row)
    return found


def _user_module(module: str | None, graph: Graph, trees: dict[str, MypyFile]) -> State | None:
    """``module``'s state when it is the user's (its messages reported) and its whole tree is loaded, else
    ``None``. An update lists among its modules the stdlib ones it skipped and installed ones read silently:
    their trees may be absent or cache skeletons (no bodies), and no message of theirs is shown."""
    state = graph.get(module) if module is not None else None
    tree = trees.get(state.id) if state is not None else None
    if state is None or state.ignore_all or tree is None or tree.is_cache_skeleton or state.tree is None:
        return None
    return state


def _dangling(graph: Graph) -> bool:
    """Whether a module of ``graph`` imports one that is not in it (a build leaves a module it cannot find
    among the suppressed imports, never there): mypy's next update stops at it with a ``KeyError``."""
    return any(name not in graph for state in graph.values() for name in state.dependencies)


def _undefined_names(errors: Errors, state: State) -> None:
    """mypy's ``used-before-def`` and ``possibly-undefined`` pass over ``state``'s module, its earlier
    messages of those codes dropped."""
    infos = errors.error_info_map.get(state.xpath)
    if infos:
        errors.error_info_map[state.xpath] = [i for i in infos if i.code not in UNDEFINED]
    state.detect_possibly_undefined_vars()


def _module_of(target: str, graph: Graph) -> str | None:
    """The module a fine-grained target (``module``, ``module.function``, ``module.Class.method``) is in."""
    parts = target.split(".")
    return next((m for n in range(len(parts), 0, -1) if (m := ".".join(parts[:n])) in graph), None)


def _functions(defs: list[Statement]) -> list[str]:
    """The full names of the functions and methods among ``defs`` (mypy's targets), classes' bodies included."""
    found = []
    for node in defs:
        if isinstance(node, FuncDef | OverloadedFuncDef | Decorator):
            found.append(node.fullname)
        elif isinstance(node, ClassDef):
            found += _functions(node.defs.body)
    return found


def syntax_errors(path: str, text: str | None, options: Options) -> list[str]:
    """mypy's messages on ``text`` (the file at ``path``) when its parser stops there, else none."""
    if text is None:
        return []
    errors = Errors(options)
    errors.set_ignore_prefix(os.getcwd())
    errors.set_file(path, None, options)
    parse(text, path, None, errors, options, eager=True)
    return errors.new_messages() if errors.is_blockers() else []


def _imports(text: str) -> str:
    """The import statements of ``text`` written on one line each that parse on their own."""
    lines = [line for line in text.splitlines() if line.startswith(("import ", "from ")) and _parses(line)]
    return "".join(f"{line}\n" for line in lines)


def _parses(line: str) -> bool:
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def _own(text: str | None) -> str | None:
    """A buffer's own text, without what the server appends (``COMM``): a syntax error is the buffer's alone
    (an unclosed string would run on into the appended line)."""
    return text[: -len(COMM)] if text is not None and text.endswith(COMM) else text


def _text(shadow: str) -> str | None:
    try:
        return Path(shadow).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _file(row: str) -> str | None:
    """The real path of the file a row of mypy's report is about (``None``: a summary, not a message)."""
    match = MESSAGE.match(row)
    return os.path.realpath(match["file"]) if match else None
