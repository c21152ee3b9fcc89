"""What mypy reads for each project file: the editor's unsaved buffer, or the file on disk.

mypy's ``--shadow-file SOURCE SHADOW`` makes a check read SHADOW in place of SOURCE (errors still name
SOURCE). The mapping is fixed when mypy's daemon starts (``BuildManager.shadow_map``, built once from the
options), so a shadow is registered for every Python file in the workspace before the daemon starts: a
symlink to the file on disk, replaced by the buffer's text while the editor holds unsaved edits. The daemon
re-reads the files it is asked to check on every check (the server asks with ``export_types``, which makes
dmypy re-process them), so an edit needs a rewrite of the shadow and no restart. A file the walk did not
find (created after the daemon started) is registered then, and the daemon restarted once for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

# folders that hold no file the user edits (environments, caches, build outputs)
SKIPPED = frozenset({"node_modules", "site-packages", "__pycache__", "build", "dist", "venv", "env"})
MAX_FILES = 5000
MAX_FOLDERS = 20000
"""The walk stops after this many files or folders (a huge tree, a home folder); a file it did not reach is
registered when it is opened."""


def project_files(root: Path, limit: int = MAX_FILES) -> Iterator[Path]:
    """The ``.py``/``.pyi`` files under ``root``, hidden and environment folders skipped, at most ``limit``."""
    count = 0
    for visited, (folder, subfolders, names) in enumerate(os.walk(root.resolve())):
        if visited >= MAX_FOLDERS:
            return
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in SKIPPED)
        for name in sorted(names):
            if name.endswith((".py", ".pyi")):
                yield Path(folder, name)
                count += 1
                if count >= limit:
                    return


class Shadows:
    """The shadow of each registered file, in ``folder``: a link to the file on disk, or the buffer's text."""

    def __init__(self, folder: Path, files: Iterable[Path] = ()) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shadows: dict[Path, Path] = {}
        for path in files:
            self.register(path)

    def covers(self, path: Path) -> bool:
        return path in self.shadows

    def register(self, path: Path) -> None:
        """Give ``path`` a shadow that reads the file on disk."""
        if path in self.shadows:
            return
        shadow = self.folder / f"{len(self.shadows)}-{path.name}"
        shadow.symlink_to(path)
        self.shadows[path] = shadow

    def follow_disk(self, path: Path) -> None:
        """mypy reads ``path`` from disk again (the buffer was saved or closed)."""
        self._replace(path, lambda temporary: temporary.symlink_to(path))

    def hold(self, path: Path, text: str) -> None:
        """mypy reads the editor's buffer ``text`` for ``path``."""
        self._replace(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))

    def _replace(self, path: Path, make: Callable[[Path], object]) -> None:
        # a check running in the daemon meanwhile reads the old shadow or the new one, never half of one
        shadow = self.shadows[path]
        temporary = shadow.with_name(shadow.name + ".new")
        temporary.unlink(missing_ok=True)
        make(temporary)
        os.replace(temporary, shadow)

    def flags(self) -> list[str]:
        """mypy's options that map every registered file to its shadow."""
        return [flag for path, shadow in self.shadows.items() for flag in ("--shadow-file", str(path), str(shadow))]
