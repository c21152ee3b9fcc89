"""How a type dmypy reports is shown in hovers and inlay hints: the one place to change it.

mypy prints NamedArray types itself (the plugin decides their notation); the server shows them as printed,
without the quotes ``dmypy inspect`` puts around each.
"""

from __future__ import annotations


def format_type(inspected: str) -> str:
    return inspected[1:-1] if len(inspected) > 1 and inspected[0] == inspected[-1] == '"' else inspected


def is_type(inspected: str) -> bool:
    """An inspection answer that is a type (dmypy answers with a sentence when it has none)."""
    return inspected.startswith('"')
