"""List every site that makes a typed_xmap error message, and whether any test produces it.

    python tests/message_sites.py [--missing] [PATH_PREFIX ...]

A site is a call of ``NamedShapeError``, ``NamedShapeSyntaxError``, ``AxisResourceConflict``,
``UnboundAxisError`` or the ``syntax_error`` factory in typed_xmap/. Its message's literal text is split
at the ``{placeholders}``; the site counts as covered when its longest literal piece appears in a string
of a test (tests/**/*.py, with implicit concatenation joined, and the pytest-mypy-plugins .yml cases).
Not a test itself: tests/test_messages.py is the catalogue this script measures.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ERRORS = {"NamedShapeError", "NamedShapeSyntaxError", "AxisResourceConflict", "UnboundAxisError"}
FACTORIES = {"syntax_error": (3, 4)}  # factory -> the positions of its message arguments


def _pieces(node: ast.expr) -> list[str] | None:
    """The literal pieces of a message expression; None when it is not a literal (a variable)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pieces(node.left), _pieces(node.right)
        return None if left is None and right is None else (left or []) + (right or [])
    return None


def sites(prefixes: list[str]) -> list[tuple[str, int, str, str]]:
    """(path, line, callee, longest literal piece) for each site under typed_xmap/."""
    return [
        (path, line, name, max((p.strip() for p in pieces), key=len, default=""))
        for path, line, name, pieces in _calls(prefixes)
    ]


def literal_texts(prefixes: list[str]) -> list[tuple[str, int, str]]:
    """(path, line, all literal pieces joined) for each site: what a message says whatever its placeholders hold."""
    return [(path, line, "".join(pieces)) for path, line, _, pieces in _calls(prefixes)]


def _calls(prefixes: list[str]) -> list[tuple[str, int, str, list[str]]]:
    found = []
    for path in sorted((ROOT / "typed_xmap").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if prefixes and not any(relative.startswith(p) for p in prefixes):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ERRORS and node.args:
                messages = [node.args[0]]
            elif name in FACTORIES:
                messages = [node.args[i] for i in FACTORIES[name] if i < len(node.args)]
            else:
                continue
            pieces = [p for m in messages for p in (_pieces(m) or [])]
            found.append((relative, node.lineno, name, pieces))
    return found


def test_strings() -> str:
    """Every string literal of the tests, one per line, and the raw .yml cases."""
    texts = []
    for path in (ROOT / "tests").rglob("*"):
        if path.suffix == ".py" and path.name != "message_sites.py":
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    texts.append(node.value)
                elif isinstance(node, ast.JoinedStr):
                    texts.extend(v.value for v in node.values if isinstance(v, ast.Constant))
        elif path.suffix in (".yml", ".yaml"):
            texts.append(path.read_text())
    return "\n".join(texts)


def main(argv: list[str]) -> int:
    missing_only = "--missing" in argv
    prefixes = [a for a in argv if not a.startswith("--")]
    corpus = test_strings()
    all_sites = sites(prefixes)
    covered = 0
    for path, line, name, piece in all_sites:
        hit = bool(piece) and piece in corpus
        covered += hit
        if not (missing_only and hit):
            print(f"{'ok  ' if hit else 'MISS'} {path}:{line} {name}: {piece[:90]!r}")
    print(f"{covered} of {len(all_sites)} sites produced by a test; {len(all_sites) - covered} missing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
