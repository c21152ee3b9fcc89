"""The architecture, read from the import graph: the algebra is pure, the plugin uses only the algebra.

Every module's imports are parsed from its source (not listed by hand), so a new module is covered
the moment it exists.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "typed_xmap"
STDLIB = frozenset(sys.stdlib_module_names)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return found


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _violations(folder: Path, allowed: tuple[str, ...]) -> list[str]:
    bad = []
    for path in _modules(folder):
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top in STDLIB or any(module == a or module.startswith(a + ".") for a in allowed):
                continue
            bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return bad


def test_algebra_imports_only_the_standard_library_and_itself():
    assert _violations(PACKAGE / "_algebra", ("typed_xmap._algebra",)) == []


def test_plugin_imports_only_mypy_the_algebra_and_itself():
    assert _violations(PACKAGE / "plugin", ("mypy", "typed_xmap._algebra", "typed_xmap.plugin")) == []


def test_the_graph_is_read_from_source():
    """The check above would see a forbidden import: a relative import resolves to its absolute name."""
    imports = dict((module, line) for line, module in _imports(PACKAGE / "_algebra" / "_shapes.py"))
    assert "typed_xmap._algebra._errors" in imports


@pytest.mark.parametrize("module", ["typed_xmap", "typed_xmap._algebra", "typed_xmap.plugin"])
def test_importing_loads_no_third_party_array_library(module):
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'numpy', 'beartype')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_algebra_package_re_exports_exactly_its_modules_names():
    """``typed_xmap._algebra`` is the one name everyone imports from: it offers each module's ``__all__``, no more."""
    import importlib

    import typed_xmap._algebra as algebra

    modules = [p.stem for p in sorted((PACKAGE / "_algebra").glob("_*.py")) if p.stem != "__init__"]
    names = {n for m in modules for n in importlib.import_module(f"typed_xmap._algebra.{m}").__all__}
    # '@py_builtins'/'@pytest_ar': pytest rewrites the asserts of a package that ships a pytest11 plugin
    exported = {n for n in vars(algebra) if not n.startswith(("_", "@"))} - set(modules)
    assert exported == names


def test_every_error_kind_has_a_plugin_code():
    from typed_xmap._algebra import ErrorKind
    from typed_xmap.plugin._codes import CODE_OF_KIND

    assert set(CODE_OF_KIND) == set(ErrorKind)
