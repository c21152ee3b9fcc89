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

COMM = '\n# mypy: enable-error-code="named-comm"\n'
"""What the server appends to the text mypy reads of an open file (its shadow; the lines above keep their
numbers): the plugin's ``named-comm`` notes, the collectives placement forces (``typed-xmap check --comm``), for
the open files only. A module option of those files alone: the other modules' cache, which ``typed-xmap check``
leaves and the daemon starts from, stays valid. A buffer that does not parse is read without it (``_dmypy``)."""
