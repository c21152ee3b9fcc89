"""A line of mypy's report as the server asks for it: ``file:line:col:end_line:end_col: error: message  [code]``.

Read by the server (``_diagnostics``) and by mypy's daemon (``_dmypy``, which imports nothing of the LSP: a
daemon that starts sooner).
"""

from __future__ import annotations

import re

MESSAGE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+):(?:(?P<end_line>\d+):(?P<end_col>\d+):)? "
    r"(?P<severity>error|warning|note): (?P<text>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)
