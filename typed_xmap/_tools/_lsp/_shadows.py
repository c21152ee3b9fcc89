"""What mypy reads for a file the editor holds: the unsaved buffer, written to a shadow file.

mypy reads a file through its shadow (its ``--shadow-file SOURCE SHADOW``: errors still name SOURCE); every
check sends the daemon the whole map (``_dmypy``), so nothing the daemon missed (it died, it restarted)
outlasts a check. A file with no shadow is read from disk. A buffer's shadow is rewritten on each edit,
atomically (a check running meanwhile reads the old text or the new one, never half of one), and the daemon
re-reads the files it is asked to check on every check (the server asks with ``export_types``, which makes
dmypy re-process them).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class Shadows:
    """The shadow of each file whose buffer mypy reads, in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shadows: dict[Path, Path] = {}

    def covers(self, path: Path) -> bool:
        return path in self.shadows

    def hold(self, path: Path, text: str) -> None:
        """mypy reads the buffer ``text`` for ``path`` from the next check on."""
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        shadow = self.shadows.setdefault(path, self.folder / f"{digest}-{path.name}")  # one file a path
        temporary = shadow.with_name(shadow.name + ".new")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, shadow)

    def release(self, path: Path) -> None:
        """mypy reads ``path`` from disk from the next check on (a check in flight may still read the shadow:
        the file stays, for the next ``hold``)."""
        self.shadows.pop(path, None)

    def flags(self) -> list[list[str]]:
        """mypy's ``shadow_file`` option: each held file and its shadow."""
        return [[str(path), str(shadow)] for path, shadow in list(self.shadows.items())]  # one step (threads)
