"""Where in a source file to ask dmypy for a type: the name under the cursor (a parameter is asked at its first
use in the body, which carries its type) and the targets of assignments without an annotation (inlay hints).

Positions here are mypy's (lines and columns 1-based, end column inclusive), made from Python's ``ast``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int

    def location(self, path: str) -> str:
        return f"{path}:{self.line}:{self.column}:{self.end_line}:{self.end_column}"


def _span(node: ast.expr | ast.arg) -> Span:
    end_line = node.end_lineno or node.lineno
    end_column = node.end_col_offset if node.end_col_offset is not None else node.col_offset + 1
    return Span(node.lineno, node.col_offset + 1, end_line, end_column)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def unannotated_targets(source: str) -> Iterator[Span]:
    """Each name bound by ``name = value`` (no annotation), where an inlay hint of its type goes."""
    tree = _parse(source)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Assign):
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                yield from (_span(name) for name in names if isinstance(name, ast.Name))


def parameter_use(source: str, line: int, column: int) -> Span | None:
    """The first use in its function's body of the parameter at ``line:column`` (1-based), if one is there."""
    tree = _parse(source)
    for node in ast.walk(tree) if tree else ():
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        every = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for argument in every:
            span = _span(argument)
            if span.line == line and span.column <= column <= span.column + len(argument.arg):
                uses = [
                    _span(n)
                    for statement in node.body
                    for n in ast.walk(statement)
                    if isinstance(n, ast.Name) and n.id == argument.arg
                ]
                return min(uses, key=lambda s: (s.line, s.column), default=None)
    return None
