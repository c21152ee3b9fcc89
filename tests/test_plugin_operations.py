"""The table of operations (``typed_xmap._algebra._operations``) is the one list: the runtime ``tnp`` functions,
``NamedArray``'s operators, the stubs, the mypy plugin's hooks and the dtype markers all equal it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from mypy.options import Options

from typed_xmap import plugin as plugin_module
from typed_xmap._algebra import MARKERS, OPERATORS, TNP_OPERATIONS, OperatorKind, OpKind, ResultDType
from typed_xmap.plugin import _routing
from typed_xmap.plugin._hooks._moe_segments import MOE_AND_SEGMENTS

ROOT = Path(__file__).resolve().parents[1]
STUBS = ROOT / "stubs" / "typed_xmap"
NOT_OPERATIONS = {"UFUNC_NAMES", "UnboundAxisError"}
AWAITING_A_HOOK = {"segment_sum", "segment_max"}
"""tnp functions with a runtime, a rule (_algebra/_segments.py) and a stub but no row in the table of operations:
the plugin gives every row the hook of its kind; these have a hook of their own instead
(typed_xmap/plugin/_hooks/_moe_segments.py, HOOKED_OUTSIDE_THE_TABLE)."""
HOOKED_OUTSIDE_THE_TABLE = {
    name.rpartition(".")[2] for name in MOE_AND_SEGMENTS if name.startswith("typed_xmap.numpy.")
}


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


def _stub_functions(path: Path) -> dict[str, list[ast.FunctionDef]]:
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, []).append(node)
    return found


def _class_methods(path: Path, name: str) -> set[str]:
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == name)
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def _plugin() -> plugin_module.TypedXmapPlugin:
    return plugin_module.TypedXmapPlugin(Options())


def test_runtime_tnp_functions_are_the_table():
    import typed_xmap.numpy as tnp
    from typed_xmap._ops._tnp._ufuncs import UFUNCS

    assert set(tnp.__all__) - NOT_OPERATIONS - AWAITING_A_HOOK == set(TNP_OPERATIONS)
    assert not AWAITING_A_HOOK & set(TNP_OPERATIONS), "a row now: drop it from AWAITING_A_HOOK"
    assert all(callable(getattr(tnp, name)) for name in TNP_OPERATIONS)
    elementwise = {n for n, op in TNP_OPERATIONS.items() if op.kind is OpKind.ELEMENTWISE}
    assert set(UFUNCS) == elementwise == set(tnp.UFUNC_NAMES)


def test_stub_functions_are_the_table():
    assert set(_stub_functions(STUBS / "numpy" / "__init__.pyi")) - AWAITING_A_HOOK == set(TNP_OPERATIONS)


def test_stub_result_dtypes_follow_the_table():
    """An operation whose result is bool (or int32 indices) says so in a stub overload for NamedArrays."""
    expected = {ResultDType.BOOL: "np.bool_", ResultDType.INDEX: "np.int32"}
    for name, defs in _stub_functions(STUBS / "numpy" / "__init__.pyi").items():
        returns = {ast.unparse(d.returns) for d in defs if d.returns is not None}
        dtype = TNP_OPERATIONS[name].dtype if name not in AWAITING_A_HOOK else ResultDType.SAME  # their data's
        if dtype is ResultDType.SAME:
            assert not any("np.bool_" in r or "np.int32" in r for r in returns), name
        else:
            assert any(r.startswith(f"NamedArray_[{expected[dtype]},") for r in returns), (name, returns)


def test_plugin_hooks_are_the_table():
    import typed_xmap.numpy as tnp

    plugin = _plugin()
    candidates = set(TNP_OPERATIONS) | set(tnp.__all__) | set(_stub_functions(STUBS / "numpy" / "__init__.pyi"))
    candidates |= {"frobnicate", "take_along_axis", "nanmedian"}
    hooked = {n for n in candidates if plugin.get_function_hook(f"typed_xmap.numpy.{n}") is not None}
    assert hooked == set(TNP_OPERATIONS) | HOOKED_OUTSIDE_THE_TABLE
    assert HOOKED_OUTSIDE_THE_TABLE == AWAITING_A_HOOK
    assert set(_routing.HOOK_OF_KIND) == set(OpKind)


def test_a_tnp_function_not_in_the_table_is_left_to_the_stub():
    """No elementwise fall-through: an unknown function gets neither a hook nor its TypeVars erased."""
    plugin = _plugin()
    assert plugin.get_function_hook("typed_xmap.numpy.nanmedian") is None
    assert plugin.get_function_signature_hook("typed_xmap.numpy.nanmedian") is None
    assert plugin.get_function_signature_hook("typed_xmap.numpy.sum") is not None


def test_operators_are_the_table():
    from typed_xmap._value._named_array import NamedArray

    dunders = {d for op in OPERATORS.values() for d in op.dunders}
    known = {f"__{p}{n}__" for n in [*OPERATORS, "matmul", "divmod"] for p in ("", "r")}
    assert {d for d in known if d in vars(NamedArray)} == dunders | {"__matmul__", "__rmatmul__"}
    static = _class_methods(ROOT / "typed_xmap" / "_static.py", "NamedArray_")
    assert {d for d in known if d in static} == dunders
    hooked = {op for op in OPERATORS.values() if op.kind is not OperatorKind.UNARY}
    assert {f"typed_xmap._static.NamedArray_.{d}" for op in hooked for d in op.dunders} == _routing.OPERATOR_METHODS


def test_dtype_markers_are_the_table():
    import typed_xmap as tx

    tree = ast.parse((ROOT / "typed_xmap" / "_static.py").read_text())
    aliases = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert aliases - {"DT", "NS", "PS", "SPEC"} == set(MARKERS)
    assert {f"typed_xmap._static.{name}" for name in MARKERS} == plugin_module.DTYPE_MARKERS
    assert set(MARKERS) <= set(tx.__all__)
    for name, spec in MARKERS.items():
        assert getattr(tx, name) is spec


def test_plugin_tests_run_with_hook_failures_surfacing(monkeypatch):
    """Every plugin test sets TYPED_XMAP_PLUGIN_DEBUG (the yml cases in tests/plugin/conftest.py): a failing
    hook raises there, instead of quietly typing its call ``Any`` (how ``tnp.dot``'s missing import hid)."""

    def broken(ctx: object) -> object:
        raise NameError("report")

    guarded = _routing.checked(broken)  # type: ignore[arg-type]
    with pytest.raises(NameError):
        guarded(object())
    monkeypatch.delenv("TYPED_XMAP_PLUGIN_DEBUG")

    class Ctx:
        default_return_type = "the stub's type"

    assert guarded(Ctx()) == "the stub's type"
