"""The architecture, read from the import graph: the algebra is pure, the plugin uses only the algebra, the
NamedArray value imports only the algebra, and no module imports itself back through others (no cycle).

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


def test_the_plugins_infrastructure_imports_no_hook():
    """``plugin/_core`` (encoding, literals, sizes, codes, messages) sits below the hooks by family: imports run
    ``plugin/__init__.py -> _hooks -> _core -> _algebra``."""
    assert _violations(PACKAGE / "plugin" / "_core", ("mypy", "typed_xmap._algebra", "typed_xmap.plugin._core")) == []


def test_the_value_imports_only_the_algebra():
    """The bottom layer: ``NamedArray`` knows no operation; ``_ops/_methods.py`` binds its methods."""
    allowed = ("jax", "numpy", "typed_xmap._algebra", "typed_xmap._value")
    assert _violations(PACKAGE / "_value", allowed) == []


def test_operations_import_no_checking_and_no_tools():
    """Operations sit below ``@tx.typed`` and the ``typed-xmap`` command."""
    bad = [v for v in _violations(PACKAGE / "_ops", ()) if "typed_xmap._checking" in v or "typed_xmap._tools" in v]
    assert bad == []


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of typed_xmap/ it imports, anywhere in its source (functions, ``TYPE_CHECKING``).

    ``from p import m`` imports module ``p.m`` when there is one; importing ``p.q.m`` from outside package
    ``p.q`` runs ``p/q/__init__.py`` first, so that package counts as imported too (a package whose
    ``__init__`` imports back the importer is the cycle that breaks at import time)."""
    paths = {_module_name(p): p for p in _modules(PACKAGE)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                found = [module] + [f"{module}.{alias.name}" for alias in node.names]
            else:
                continue
            for imported in found:
                target = imported
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                while target:  # the module, then each package above it that the importer is not inside
                    if target != name and not (name + ".").startswith(target + "."):
                        targets.add(target)
                    target = target.rpartition(".")[0]
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_anywhere():
    """A deferred import that closes a cycle is still a cycle: it only moves the failure to the first call."""
    assert [", ".join(c) for c in _cycles(_graph())] == []


def test_the_cycle_check_counts_the_packages_an_import_runs():
    """``_indexing`` once imported ``typed_xmap.numpy._mapped_axes``, whose package ``__init__`` imports
    ``_indexing``: the graph counts the package, so that cycle shows."""
    graph = _graph()
    assert {"typed_xmap._value", "typed_xmap._value._named_array"} <= graph["typed_xmap._ops._indexing"]
    assert "typed_xmap._ops" not in graph["typed_xmap._ops._indexing"]  # its own package is already running
    assert "typed_xmap._ops._indexing" in graph["typed_xmap.numpy"]
    graph["typed_xmap._ops._indexing"].add("typed_xmap.numpy")
    assert any({"typed_xmap._ops._indexing", "typed_xmap.numpy"} <= set(c) for c in _cycles(graph))


FEATURES = """
import importlib, sys
importlib.import_module(sys.argv[1])
import numpy as np
import jax, jax.numpy as jnp
import typed_xmap as tx
x = tx.named(jnp.arange(6.0).reshape(2, 3), ("a", "b"))
v = np.arange(6.0).reshape(2, 3)
assert np.array_equal(tx.positional(x[{"a": 1}], ("b",)), v[1])
assert np.array_equal(tx.positional(x.at[{"a": 0}].set(7.0), ("a", "b")), np.where([[1], [0]], 7.0, v))
assert np.array_equal(tx.positional(x.sum("a"), ("b",)), v.sum(0))
assert np.array_equal(tx.positional(x * x.rename({"a": "c"}), ("a", "b", "c")), v[:, :, None] * v.T[None])
import typed_xmap.numpy as tnp
assert np.allclose(tx.positional(tnp.exp(x).mean("b"), ("a",)), np.exp(v).mean(1))
f = tx.xmap(lambda row: row - tnp.mean(row, "b"), in_axes=[{0: "b"}], out_axes={0: "b"})
assert np.allclose(f(jnp.asarray(v.T)), v.T - v.T.mean(0))
assert tx.NamedArray[tx.f32, "a b"].__name__ == "NamedArray[float32, 'a b']"
print("ok")
"""

PUBLIC_MODULES = [
    "typed_xmap",
    "typed_xmap.numpy",
    "typed_xmap.random",
    "typed_xmap.plugin",
    "typed_xmap._static",
    "typed_xmap._checking._pytest_plugin",
    "typed_xmap._tools._cli",
]


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_any_public_module_imported_first_then_every_feature(module):
    """In a fresh process, whichever public module comes first, indexing, ``.at``, methods, operators,
    tnp and xmap work (the methods are bound once, whoever asks first)."""
    result = subprocess.run(
        [sys.executable, "-c", FEATURES, module], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


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
    from typed_xmap.plugin._core._codes import CODE_OF_KIND

    assert set(CODE_OF_KIND) == set(ErrorKind)
