"""The public surface and the command line (import boundaries: tests/test_architecture.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )


def test_public_names_resolve():
    for name in tx.__all__:
        assert getattr(tx, name) is not None, name
    assert issubclass(tx.NamedShapeError, TypeError) and issubclass(tx.NamedShapeError, ValueError)
    assert issubclass(tx.AxisResourceConflict, tx.NamedShapeError)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tx.nope


def _command(args: list[str], cwd: Path = ROOT, without: str = "XLA_FLAGS") -> subprocess.CompletedProcess[str]:
    """Run ``args`` in ``cwd`` with this environment less the variable ``without``."""
    env = {k: v for k, v in os.environ.items() if k != without}
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300, check=False, env=env)


def test_demo_runs():
    result = _command([sys.executable, "-m", "typed_xmap._tools._cli", "demo"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 cpu devices" in result.stdout
    assert "NamedShapeError" in result.stdout and "AxisResourceConflict" in result.stdout
    assert "equals a @ b: True" in result.stdout and "split: left -> x, right -> y" in result.stdout
    assert "[named-axis-missing]" in result.stdout and "Success: no issues found" in result.stdout
    assert "demo finished" in result.stdout


def test_every_package_folder_is_shipped():
    """A package folder missing from pyproject's list works in an editable install and is absent from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "typed_xmap").rglob("__init__.py")}
    assert on_disk - listed == set(), f"add these to [tool.setuptools] packages in pyproject.toml: {on_disk - listed}"


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_is_apache_2_shipped_as_a_file():
    project = _pyproject()["project"]
    text = (ROOT / "LICENSE").read_text()
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"] and "END OF TERMS AND CONDITIONS" in text


def test_classifiers_say_typed_and_the_python_versions_supported():
    project = _pyproject()["project"]
    classifiers = set(project["classifiers"])
    assert "Typing :: Typed" in classifiers
    assert project["requires-python"] == ">=3.11"
    versions = {c.rsplit(" ", 1)[1] for c in classifiers if c.startswith("Programming Language :: Python :: 3.")}
    assert versions == {"3.11", "3.12", "3.13"}
    # the license is the SPDX expression: setuptools >= 77 refuses a License classifier beside it (PEP 639)
    assert not [c for c in classifiers if c.startswith("License ::")]


def test_the_jax_pin_admits_jax_0_10_to_0_13():
    from packaging.requirements import Requirement

    pins = {r.name: r.specifier for r in map(Requirement, _pyproject()["project"]["dependencies"])}
    for name in ("jax", "jaxlib"):
        admitted = [v for v in ("0.9.2", "0.10.2", "0.11.2", "0.12.0.1", "0.13.0", "0.14.0") if v in pins[name]]
        assert admitted == ["0.10.2", "0.11.2", "0.12.0.1", "0.13.0"], name


def test_no_address_where_the_project_does_not_live():
    """The project has no public repository or home page yet: the docs and metadata name none."""
    import re

    assert "urls" not in _pyproject()["project"]
    pages = [ROOT / "README.md", ROOT / "mkdocs.yml", ROOT / "pyproject.toml", *(ROOT / "docs").rglob("*.md")]
    found = [(p.name, m) for p in pages for m in re.findall(r"(?:github|gitlab)\.com/[\w./-]+", p.read_text())]
    assert found == []
    assert "repo_url" not in (ROOT / "mkdocs.yml").read_text()


def test_the_mypy_config_shown_is_the_one_check_runs():
    """README and the typing guide show ``[tool.mypy]`` exactly as ``typed-xmap check`` configures mypy."""
    import re

    from typed_xmap._tools._check import config_toml

    shown = []
    for page in (
        ROOT / "README.md",
        ROOT / "docs" / "typing" / "index.md",
        ROOT / "docs" / "typing" / "real-model-code.md",
    ):
        for block in re.findall(r"^```toml\n(.*?)^```", page.read_text(), re.S | re.M):
            if "[tool.mypy]" in block:
                lines = [line.split("#", 1)[0].rstrip() for line in block.splitlines()]
                shown.append((page.name, "\n".join(line for line in lines if line) + "\n"))
    assert [name for name, _ in shown] == ["README.md", "index.md", "real-model-code.md"]
    assert all(block == config_toml() for _, block in shown), shown


REBINDING = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def layer(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch mlp"]:
    h = tnp.relu(x)
    h = tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w)
    return h
"""


@pytest.mark.slow
def test_plain_mypy_with_the_shown_config_agrees_with_typed_xmap_check(tmp_path):
    """The same file, the same verdict, where the config matters: a name rebound to a new shape passes plain
    mypy with the config shown and ``typed-xmap check``, and fails mypy with the plugin alone."""
    from typed_xmap._tools._check import config_ini

    (tmp_path / "layer.py").write_text(REBINDING)
    (tmp_path / "shown.ini").write_text(config_ini())
    (tmp_path / "plugin_only.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
    runs = {
        "mypy, the config shown": [sys.executable, "-m", "mypy", "--config-file", "shown.ini"],
        "typed-xmap check": [sys.executable, "-m", "typed_xmap._tools._cli", "check"],
        "mypy, the plugin alone": [sys.executable, "-m", "mypy", "--config-file", "plugin_only.ini"],
    }
    status = {
        name: _command([*command, "--cache-dir", str(tmp_path / str(i)), "layer.py"], tmp_path, "MYPYPATH").returncode
        for i, (name, command) in enumerate(runs.items())
    }
    assert status == {"mypy, the config shown": 0, "typed-xmap check": 0, "mypy, the plugin alone": 1}


def test_bench_without_its_folder_says_where_to_run_it(monkeypatch, capsys):
    from typed_xmap._tools import _bench

    monkeypatch.setattr(_bench, "bench_folder", lambda: None)
    assert _bench.run_benchmarks([]) == 1
    err = capsys.readouterr().err
    assert "an installed wheel does not carry" in err and "Fix: run `typed-xmap bench` from the root of a clone" in err


def test_bench_closes_with_the_families_ratios_against_their_goals(monkeypatch, capsys, tmp_path):
    """Each family benchmark records its row; ``typed-xmap bench`` prints them all in one table at the end, a
    ratio over its goal marked with ``!`` (as shown, to two decimals)."""
    from typed_xmap._tools import _bench, _summary

    monkeypatch.setattr(_summary, "_ROWS", {})
    monkeypatch.setattr(_bench, "bench_folder", lambda: tmp_path)
    rows = {"a": ("transformer", "(0.98, 1.02), 'trace': (1.004, 1.0)"), "b": ("MoE layer", "(1.1, 1.02)")}
    for script, (family, cells) in rows.items():
        (tmp_path / f"{script}.py").write_text(
            "from typed_xmap._tools._summary import record\n\n\ndef main():\n"
            f"    record({family!r}, {{'step': {cells}}})\n"
        )
    assert _bench.run_benchmarks([]) == 0
    table = capsys.readouterr().out.splitlines()[-4:]
    assert table[0].startswith("summary: ratio to plain jnp")
    assert table[1].split() == ["step", "(<=1.02x)", "trace", "(<=1x)"]
    assert table[2].split() == ["transformer", "0.98x", "1.00x"]
    assert table[3].split() == ["MoE", "layer", "1.10x!", "-"]


def test_bench_prints_each_table_with_its_own_columns_the_families_first(monkeypatch):
    """A benchmark whose columns are not the families' (the layout case, a jit call's per-call rows) records into
    a table of its own: each table has its title and its columns, the families' table comes first."""
    from typed_xmap._tools import _summary

    monkeypatch.setattr(_summary, "_ROWS", {})
    _summary.record("other order / name order", {"same value, small": (1.04, 1.1)}, table="layout: title")
    _summary.record("transformer", {"step": (0.98, 1.0)})
    _summary.record("NamedArray / plain arrays", {"call, 448 leaves": (1.31, 1.3)}, table="per call: title")
    lines = _summary.summary_lines()
    assert lines[0] == _summary.FAMILIES and lines[2].split() == ["transformer", "0.98x"]
    assert lines[3:6] == ["layout: title", lines[4], lines[5]]
    assert lines[4].split() == ["same", "value,", "small", "(<=1.1x)"]
    assert lines[5].split() == ["other", "order", "/", "name", "order", "1.04x"]
    assert lines[6] == "per call: title" and lines[7].split() == ["call,", "448", "leaves", "(<=1.3x)"]
    assert lines[8].split() == ["NamedArray", "/", "plain", "arrays", "1.31x!"]


def _readme_commands() -> list[str]:
    import re

    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)]


def test_readme_command_1_installs_what_every_example_imports():
    """After README command 1 alone, ``python examples/X.py`` and ``typed-xmap check`` on it find every import:
    each third-party module an example imports comes from a dependency or an extra that command installs (and
    the test extra, whose suite runs the examples, has them too)."""
    import ast
    import importlib.metadata
    import re

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    command = _readme_commands()[0]
    extras = re.fullmatch(r'.*pip install -e "\.\[([\w,]+)\]".*', command)
    assert extras is not None, f"README command 1 installs no extra: {command}"
    project = _pyproject()["project"]
    optional = project["optional-dependencies"]

    def names(requirements: list[str]) -> set[str]:
        return {canonicalize_name(Requirement(r).name) for r in requirements}

    installed = names(project["dependencies"]).union(*(names(optional[e]) for e in extras.group(1).split(",")))
    assert names(optional["examples"]) <= names(optional["test"])
    providers = importlib.metadata.packages_distributions()
    missing = []
    for example in sorted((ROOT / "examples").rglob("*.py")):
        for node in ast.walk(ast.parse(example.read_text())):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            for top in {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {"typed_xmap"}:
                if not {canonicalize_name(d) for d in providers.get(top, [])} & installed:
                    missing.append(f"{example.relative_to(ROOT)}: {top}")
    assert missing == [], f"add to the examples extra (README command 1 installs it): {missing}"


def test_no_page_installs_from_the_package_index():
    """typed_xmap is not on the package index: ``pip install typed-xmap`` (or an extra of it) ends in ``No
    matching distribution found``, so the docs install from a clone or a wheel built from one."""
    import re

    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "typed_xmap").rglob("*.py")]
    install = re.compile(r"pip install (?:-U |--upgrade )?['\"]?typed[-_]xmap\b\S*")
    claims = [  # a line that says what such a command ends in warns; it does not claim
        (p.name, m)
        for p in pages
        for line in p.read_text().splitlines()
        if "No matching distribution found" not in line
        for m in install.findall(line)
    ]
    assert claims == []
