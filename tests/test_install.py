"""What a user's type checkers see after installing typed_xmap as the README says (`pip install -e .`), from
a wheel or from an sdist: plain mypy with `plugins = typed_xmap.plugin` finds the package and its stubs and
catches a bug, and pyright resolves every import (typed_xmap.numpy through the stubs) with no false errors.

Each case installs a copy of this tree into a new virtual environment (`--no-deps`: the dependencies come from
the running environment through a path line, whose own .pth files are not run, so its typed_xmap is not seen).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns(".git", ".venv", "site", "build", "dist", "*.egg-info", "__pycache__", ".*_cache")

USER_CODE = """\
import jax
import jax.numpy as jnp
import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def affine(
    x: NamedArray[f32, "batch in_features"], w: NamedArray[f32, "in_features out_features"]
) -> NamedArray[f32, "batch out_features"]:
    return tnp.einsum("{in_features},{in_features,out_features}->{out_features}", x, w)


x = tx.named(jnp.ones((8, 4)), ["batch", "in_features"])
w = tx.named(jnp.ones((4, 3)), ["in_features", "out_features"])
y = affine(x, w)
h = tx.named(jnp.ones((8, 5)), ["batch", "hidden"])
bad = affine(h, w)
# pyright reads typed_xmap.numpy through the stubs (a NamedArray_ with operators), not the runtime package
zs: NamedArray[f32, "batch"] = tnp.zeros({"batch": 8}) * 2.0
# the leaf test of a tree map over params: pyright, and mypy with the plugin, take tx.NamedArray in isinstance
halved = jax.tree.map(lambda v: v * 0.5, {"w": w, "zs": zs}, is_leaf=lambda v: isinstance(v, tx.NamedArray))
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env=env)


@pytest.fixture(scope="module", params=["editable", "wheel", "sdist"])
def installed_python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv's python with a copy of this tree installed the way the README (or a wheel) installs it."""
    work = tmp_path_factory.mktemp(request.param)
    source = work / "typed_xmap_src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=IGNORED)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site_packages = Path(
        _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work).stdout.strip()
    )
    (site_packages / "_outer_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    target = ["-e", str(source)] if request.param == "editable" else [str(source)]
    if request.param == "sdist":  # what PyPI would serve besides the wheel: built, then installed from the tarball
        built = _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(work / "dist"), str(source)], work)
        assert built.returncode == 0, built.stdout + built.stderr
        target = [str(next((work / "dist").glob("*.tar.gz")))]
    result = _run([str(python), "-m", "pip", "install", "-q", "--no-deps", *target], work)
    assert result.returncode == 0, result.stdout + result.stderr
    return python


def _user_project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(USER_CODE)
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\n")
    return tmp_path


@pytest.mark.slow
def test_plain_mypy_with_the_plugin_checks_user_code(installed_python: Path, tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    result = _run([str(installed_python), "-m", "mypy", "model.py"], project)
    lines = result.stdout.splitlines()
    assert "Cannot find implementation" not in result.stdout, result.stdout
    assert any(
        line.startswith('model.py:18: error: Argument 1 to "affine"') and "[arg-type]" in line for line in lines
    ), result.stdout
    assert lines[-1] == "Found 1 error in 1 file (checked 1 source file)", result.stdout


@pytest.mark.slow
def test_pyright_resolves_typed_xmap_with_no_false_errors(installed_python: Path, tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    pyright = Path(sys.executable).parent / "pyright"
    result = _run([str(pyright), "--pythonpath", str(installed_python), "model.py"], project)
    assert "could not be resolved" not in result.stdout, result.stdout
    assert "is not defined" not in result.stdout, result.stdout
    assert result.stdout.strip().splitlines()[-1] == "0 errors, 0 warnings, 0 informations", result.stdout


@pytest.mark.slow
def test_plain_mypy_reads_the_stubs(installed_python: Path, tmp_path: Path) -> None:
    """mypy without the plugin (no config) types tnp through the stubs: NamedArrays of the operands' dtype."""
    (tmp_path / "plain.py").write_text(
        "import typed_xmap.numpy as tnp\nfrom typed_xmap import NamedArray, f32\n\n"
        'def f(x: NamedArray[f32, "batch embed"]) -> None:\n'
        '    reveal_type(tnp.zeros({"batch": 2}) + 1.0)\n'
        '    reveal_type(tnp.einsum("{embed},{embed}->", x, x))\n'
    )
    result = _run([str(installed_python), "-m", "mypy", "--strict", "plain.py"], tmp_path)
    revealed = [line.split("Revealed type is ", 1)[1] for line in result.stdout.splitlines() if "Revealed" in line]
    assert revealed == [
        '"typed_xmap._static.NamedArray_[Any, Any, Any]"',
        '"typed_xmap._static.NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], Any, Any]"',
    ], result.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the sdist, the wheel, a new venv's python with the wheel installed), built from a copy of this tree."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "typed_xmap_src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=IGNORED)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    out = work / "out"  # as docs/getting-started.md builds them: the sdist, then the wheel from the sdist
    result = _run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], work)
    assert result.returncode == 0, result.stdout + result.stderr
    sdist, wheel = next(out.glob("*.tar.gz")), next(out.glob("*.whl"))
    site_packages = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work)
    (Path(site_packages.stdout.strip()) / "_outer_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    result = _run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], work)
    assert result.returncode == 0, result.stdout + result.stderr
    return sdist, wheel, python


@pytest.mark.slow
def test_the_sdist_and_the_wheel_carry_the_license_and_metadata(built: tuple[Path, Path, Path]) -> None:
    import tarfile
    import zipfile

    sdist, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        license_text = archive.read(next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))).decode()
    assert license_text == (ROOT / "LICENSE").read_text()
    assert "License-Expression: Apache-2.0" in metadata and "Classifier: Typing :: Typed" in metadata
    assert "Requires-Dist: jax<0.14,>=0.10" in metadata and "Project-URL" not in metadata
    with tarfile.open(sdist) as archive:
        inside = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "bench/_timing.py", "bench/xmap_dispatch.py", "examples/transformer.py"} <= inside


@pytest.mark.slow
def test_bench_from_the_wheel_says_where_to_run_it_and_runs_in_the_sdist(
    built: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    import tarfile

    sdist, _, python = built
    elsewhere = _run([str(python), "-m", "typed_xmap._tools._cli", "bench"], tmp_path)
    assert elsewhere.returncode == 1, elsewhere.stdout + elsewhere.stderr
    assert "Fix: run `typed-xmap bench` from the root of a clone or of the unpacked sdist" in elsewhere.stderr
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    root = next(p for p in tmp_path.iterdir() if p.name.startswith("typed_xmap-"))
    found = _run([str(python), "-m", "typed_xmap._tools._cli", "bench", "no_such_bench"], root)
    assert "unknown benchmarks ['no_such_bench']; known: [" in found.stdout and "'xmap_dispatch'" in found.stdout


@pytest.mark.slow
def test_check_inside_the_clone_reads_the_installed_stubs(installed_python: Path, tmp_path: Path) -> None:
    """mypy looks in the current folder before stub packages: run inside the clone it was installed from (not
    editable), ``typed-xmap check`` must still type typed_xmap through the stubs, not check the clone's sources
    under the clone's own strict config."""
    clone = installed_python.parents[2] / "typed_xmap_src"
    check = [str(installed_python.parent / "typed-xmap"), "check", "--cache-dir", str(tmp_path / "cache")]
    result = _run([*check, "examples/typed/mlp.py"], clone)
    assert "typed_xmap/_" not in result.stdout, result.stdout
    assert result.returncode == 0 and "Success: no issues found in 1 source file" in result.stdout, result.stdout
    twice = _run([*check, "examples/typed/mlp.py"], clone)  # the link under the cache folder is reused
    assert twice.returncode == 0, twice.stdout


@pytest.mark.slow
def test_release_check_twine_and_the_demo_from_the_installed_wheel(
    built: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """What a release needs: both archives pass ``twine check --strict``, the wheel has the name
    docs/getting-started.md installs, and ``typed-xmap demo`` runs from a new venv holding it (outside any clone)."""
    import re
    import tomllib

    sdist, wheel, python = built
    twine = _run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], tmp_path)
    assert twine.returncode == 0 and twine.stdout.count("PASSED") == 2, twine.stdout + twine.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert wheel.name == f"typed_xmap-{version}-py3-none-any.whl"
    shown = re.findall(r"dist/(typed_xmap-\S+\.whl)", (ROOT / "docs" / "getting-started.md").read_text())
    assert shown == [wheel.name], shown
    demo = _run([str(python.parent / "typed-xmap"), "demo"], tmp_path)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "Success: no issues found" in demo.stdout and "demo finished" in demo.stdout, demo.stdout[-3000:]
