"""Small interoperability items: jax.export round trips, annotations pickle, the command's --version/--help."""

import copy
import pickle
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import Float, NamedArray, f32


def test_jax_export_round_trip_of_a_function_on_named_arrays():
    pytest.importorskip("flatbuffers")

    def f(x, w):
        return {"y": tnp.einsum("{b,i},{i,o}->{b,o}", x, w)}

    x = tx.named(jnp.ones((2, 3)), ["b", "i"])
    w = tx.named(jnp.arange(12.0).reshape(3, 4), ["i", "o"])
    exported = jax.export.export(jax.jit(f))(x, w)
    restored = jax.export.deserialize(exported.serialize())
    out = restored.call(x, w)["y"]
    assert isinstance(out, tx.NamedArray) and out.named_shape == {"b": 2, "o": 4}
    np.testing.assert_allclose(tx.positional(out, ["b", "o"]), np.ones((2, 3)) @ np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize(
    "hint",
    [
        NamedArray[f32, "batch embed"],
        NamedArray[Float, "a=3", "n 3"],
        NamedArray[f32, "*rest embed"],
        NamedArray[f32, ""],
    ],
    ids=str,
)
def test_annotations_pickle_to_the_same_class(hint):
    assert pickle.loads(pickle.dumps(hint)) is hint
    assert copy.deepcopy(hint) is hint
    assert pickle.loads(pickle.dumps(dict[str, hint])) == dict[str, hint]


def test_the_command_prints_its_version_and_plain_help():
    version = subprocess.run(
        [sys.executable, "-m", "typed_xmap._tools._cli", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == f"typed-xmap {tx.__version__}"
    usage = subprocess.run(
        [sys.executable, "-m", "typed_xmap._tools._cli", "--help"], capture_output=True, text=True, check=True
    )
    assert "``" not in usage.stdout and "demo (the main job)" in usage.stdout
