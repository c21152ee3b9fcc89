"""``tx.install_import_hook`` and the pytest option ``--typed-xmap-packages``: package-wide runtime checks."""

import os
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

import typed_xmap as tx

MODULE = '''
"""A model module that never mentions tx.typed."""
from __future__ import annotations

import jax
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def total(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x * w, "embed")


@jax.jit
def jitted(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch"]:
    return tnp.sum(x, "embed")


def untouched(x, w):
    return x


class Layer:
    def __call__(self, x: NamedArray[f32, "embed"]) -> NamedArray[f32, "embed"]:
        return x

    def outer(self):
        def inner(y: NamedArray[f32, "hidden"]) -> NamedArray[f32, "hidden"]:
            return y

        return inner
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    name = f"hookpkg_{os.getpid()}_{len(sys.modules)}"
    root = tmp_path / name
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "model.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def v(shape, axes):
    return tx.named(jnp.ones(shape), axes)


def test_the_hook_checks_every_annotated_function_of_the_package(package):
    with tx.install_import_hook([package]):
        model = __import__(f"{package}.sub.model", fromlist=["model"])
    x = v((2, 4), ["batch", "embed"])
    assert model.total(x, v(4, ["embed"])).named_shape == {"batch": 2}
    with pytest.raises(tx.NamedShapeError, match=r"total\(\) parameter 'w' is NamedArray\(float32\[embed=5\]\)"):
        model.total(x, v(5, ["embed"]))
    with pytest.raises(tx.NamedShapeError, match=r"jitted\(\) parameter 'x' is NamedArray\(float32\[batch=2\]\)"):
        model.jitted(v(2, ["batch"]))  # @tx.typed sits inside @jax.jit
    assert model.untouched(1, 2) == 1
    with pytest.raises(tx.NamedShapeError, match=r"__call__\(\) parameter 'x'"):
        model.Layer()(v(3, ["hidden"]))
    with pytest.raises(tx.NamedShapeError, match=r"inner\(\) parameter 'y'"):
        model.Layer().outer()(v(3, ["embed"]))


def test_without_the_hook_nothing_is_checked_and_uninstall_removes_it(package):
    hook = tx.install_import_hook(package + "_other")
    hook.uninstall()
    assert all(type(f).__name__ != "_TypedFinder" for f in sys.meta_path)
    model = __import__(f"{package}.sub.model", fromlist=["model"])
    x = v((2, 4), ["batch", "embed"])
    assert model.total(x, v(4, ["embed"])).named_shape == {"batch": 2}  # unchecked: broadcasts fine
    model.Layer()(v(3, ["hidden"]))  # unchecked


def test_the_pytest_option_checks_the_named_packages(tmp_path):
    root = tmp_path / "mypkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "model.py").write_text(MODULE)
    (tmp_path / "test_model.py").write_text(
        textwrap.dedent(
            """
            import jax.numpy as jnp
            import pytest
            import typed_xmap as tx
            from mypkg import model


            def test_checked():
                x = tx.named(jnp.ones((2, 4)), ["batch", "embed"])
                with pytest.raises(tx.NamedShapeError, match="parameter 'w'"):
                    model.total(x, tx.named(jnp.ones(5), ["embed"]))
            """
        )
    )
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(tmp_path)]
    checked = subprocess.run(
        [*command, "--typed-xmap-packages=mypkg"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    unchecked = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert unchecked.returncode == 1 and "Regex pattern did not match" in unchecked.stdout, unchecked.stdout
