"""What mypy reads for a file the editor holds: the unsaved buffer, written to a shadow file.

mypy reads a file through its shadow (its ``--shadow-file SOURCE SHADOW``: errors still name SOURCE) once the
daemon has been told of it (``_dmypy``'s ``shadow`` command, or the options of a daemon started later); a file
with no shadow is read from disk. A buffer's shadow is rewritten on each edit, atomically (a check running
meanwhile reads the old text or the new one, never half of one), and the daemon re-reads the files it is
asked to check on every check (the server asks with ``export_types``, which makes dmypy re-process them).
"""

from __future__ import annotations

import os
from pathlib import Path


class Shadows:
    """The shadow of each file whose buffer mypy reads, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shadows: dict[Path, Path] = {}
        self.made = 0

    def covers(self, path: Path) -> bool:
        return path in self.shadows

    def hold(self, path: Path, text: str) -> bool:
        """mypy reads the buffer ``text`` for ``path``; ``True`` when the daemon must be told of a new shadow."""
        new = path not in self.shadows
        if new:
            self.made += 1
            self.shadows[path] = self.folder / f"{self.made}-{path.name}"
        shadow = self.shadows[path]
        temporary = shadow.with_name(shadow.name + ".new")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, shadow)
        return new

    def release(self, path: Path) -> Path | None:
        """mypy reads ``path`` from disk again: its shadow, if it had one, for the caller to remove once the
        daemon has been told (a check in flight may still read it)."""
        return self.shadows.pop(path, None)

    def flags(self) -> list[list[str]]:
        """mypy's ``shadow_file`` option: each held file and its shadow."""
        return [[str(path), str(shadow)] for path, shadow in list(self.shadows.items())]  # one step (threads)
