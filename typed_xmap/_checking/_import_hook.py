"""``tx.install_import_hook(["mypkg"])``: ``@tx.typed`` on every NamedArray-annotated function of a package.

A finder at the front of ``sys.meta_path`` catches the modules of the named packages (the package and its
submodules) and loads them from source through ``_TypedLoader``, which decorates, in the syntax tree, every
function (methods and nested functions too) whose parameters or return are annotated with an expression
mentioning ``NamedArray``, innermost (so ``@jax.jit`` and other decorators wrap the checked function).
``@typing.overload`` stubs and functions already decorated with ``typed`` are left alone. The transformed
code is never written to ``__pycache__``: an ordinary import of the same module compiles its own.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

__all__ = ["ImportHook", "install_import_hook"]

_DECORATOR = "__typed_xmap_typed__"


class ImportHook:
    """The installed hook; ``uninstall()`` it, or use it as a context manager (``with tx.install_import_hook(...)``)."""

    def __init__(self, finder: _TypedFinder) -> None:
        self._finder = finder

    def uninstall(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)

    def __enter__(self) -> ImportHook:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.uninstall()


def install_import_hook(packages: str | Iterable[str]) -> ImportHook:
    """Check NamedArray annotations at run time in every module of ``packages`` imported from now on.

    Install it before the packages are imported (in a ``conftest.py`` or the application's entry point).

    Args:
        packages: a package name, or several, whose modules (and submodules) get every annotated function and
            method checked as ``@tx.typed`` checks it.

    Returns:
        The installed hook; ``hook.uninstall()`` removes it.

    Raises:
        NamedShapeError: later, at a call of a checked function whose values do not fit its annotations, as
            ``@tx.typed`` raises it.

    Examples:
        >>> hook = tx.install_import_hook("my_model")
        >>> hook.uninstall()
    """
    names = (packages,) if isinstance(packages, str) else tuple(packages)
    finder = _TypedFinder(names)
    sys.meta_path.insert(0, finder)
    return ImportHook(finder)


class _TypedFinder(importlib.abc.MetaPathFinder):
    def __init__(self, packages: Sequence[str]) -> None:
        self.packages = tuple(packages)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname == p or fullname.startswith(p + ".") for p in self.packages):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        spec.loader = _TypedLoader(spec.loader.name, spec.loader.path)
        return spec


class _TypedLoader(importlib.machinery.SourceFileLoader):
    """Compiles the module from source with the decorators added; no bytecode cache is read or written."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]
        tree = ast.parse(data, filename=path)
        _Decorate().visit(tree)
        _import_decorator(tree)
        return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True, optimize=_optimize)

    def set_data(self, path: Any, data: Any, *, _mode: int = 0o666) -> None:
        return None  # never cache the transformed code


class _Decorate(ast.NodeTransformer):
    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._decorate(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._decorate(node)

    def _decorate(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        if _annotated(node) and not any(
            _name(d) in ("overload", "typed", "no_type_check") for d in node.decorator_list
        ):
            node.decorator_list.append(ast.Name(id=_DECORATOR, ctx=ast.Load()))
        return node


def _annotated(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether an annotation of ``node`` mentions ``NamedArray`` (``NamedArray[...]``, ``tx.NamedArray[...]``)."""
    args = node.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    hints = [p.annotation for p in params if p is not None and p.annotation is not None] + [node.returns]
    for hint in hints:
        if hint is None:
            continue
        for sub in ast.walk(hint):
            if isinstance(sub, ast.Name) and sub.id == "NamedArray":
                return True
            if isinstance(sub, ast.Attribute) and sub.attr == "NamedArray":
                return True
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "NamedArray" in sub.value:
                return True  # a string annotation
    return False


def _name(decorator: ast.expr) -> str | None:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _import_decorator(tree: ast.Module) -> None:
    """``from typed_xmap import typed as __typed_xmap_typed__`` after the docstring and ``__future__`` imports."""
    index = 0
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        index = 1
    while index < len(body) and isinstance(body[index], ast.ImportFrom) and body[index].module == "__future__":  # type: ignore[attr-defined]
        index += 1
    body.insert(index, ast.ImportFrom(module="typed_xmap", names=[ast.alias(name="typed", asname=_DECORATOR)], level=0))
