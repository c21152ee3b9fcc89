"""The traceback of an error in user code ends at the user's line and our message, without our frames.

Read as a user reads it: the rendered traceback (``traceback.format_exception``) of the error caught.
"""

import os
import traceback

import jax
import jax.numpy as jnp
import pytest

import typed_xmap as tx
import typed_xmap.numpy as tnp

PACKAGE = os.path.dirname(os.path.abspath(tx.__file__))
THIS_FILE = os.path.abspath(__file__)


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


def _our_frames(error):
    frames = traceback.extract_tb(error.__traceback__)
    return [f"{f.filename}:{f.lineno}" for f in frames if os.path.abspath(f.filename).startswith(PACKAGE)]


def _assert_ends_at_user_line(error, line_text):
    rendered = "".join(traceback.format_exception(error))
    assert _our_frames(error) == [], rendered
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert os.path.abspath(last.filename) == THIS_FILE and last.line == line_text, rendered
    assert isinstance(error, tx.NamedShapeError) and "Fix:" in str(error)


def _mismatched(a, b):
    return a + b  # the user's line


A = tx.named(jnp.ones((2, 3)), ["batch", "embed"])
B = tx.named(jnp.ones((2, 4)), ["batch", "embed"])


def test_an_error_under_jit_ends_at_the_user_line():
    error = _raised(lambda: jax.jit(_mismatched)(A, B))
    _assert_ends_at_user_line(error, "return a + b  # the user's line")


def test_an_error_under_grad_and_vmap_ends_at_the_user_line():
    def loss(a):
        return tx.positional(tnp.sum(_mismatched(a, B), ("batch", "embed")), [])

    error = _raised(lambda: jax.vmap(jax.grad(loss))(tx.named(jnp.ones((5, 2, 3)), {1: "batch", 2: "embed"})))
    _assert_ends_at_user_line(error, "return a + b  # the user's line")


def test_an_eager_operator_error_ends_at_the_user_line():
    error = _raised(lambda: _mismatched(A, B))
    _assert_ends_at_user_line(error, "return a + b  # the user's line")


def test_an_eager_public_function_error_ends_at_the_user_line():
    error = _raised(lambda: tnp.sum(A, "heads"))  # the user's tnp line
    _assert_ends_at_user_line(error, 'error = _raised(lambda: tnp.sum(A, "heads"))  # the user\'s tnp line')
    error = _raised(lambda: tx.shard(B, {"embed": "model"}, mesh=jax.make_mesh((2, 4), ("data", "model"))))
    assert _our_frames(error) == [], "".join(traceback.format_exception(error))
    error = _raised(lambda: A.sum("heads"))  # a method
    assert _our_frames(error) == [], "".join(traceback.format_exception(error))


def test_filtering_off_shows_every_frame():
    jax.config.update("jax_traceback_filtering", "off")
    try:
        error = _raised(lambda: jax.jit(_mismatched)(A, B))
    finally:
        jax.config.update("jax_traceback_filtering", "auto")
    assert _our_frames(error), "with JAX_TRACEBACK_FILTERING=off our frames stay, for debugging typed_xmap"


@tx.typed
def _typed_layer(x: tx.NamedArray[tx.f32, "batch embed"]) -> tx.NamedArray[tx.f32, "batch"]:
    return x.sum("embed")


def test_a_failed_typed_check_ends_at_the_user_call_and_the_named_wrapper():
    """Our frames are gone; the one frame left after the user's call is the generated wrapper, named for them."""
    error = _raised(lambda: _typed_layer(B.rename({"embed": "hidden"})))  # the user's typed call
    frames = traceback.extract_tb(error.__traceback__)
    assert _our_frames(error) == [], "".join(traceback.format_exception(error))
    assert [f.filename for f in frames[-2:]] == [THIS_FILE, "<@tx.typed _typed_layer>"]
    assert "parameter 'x'" in str(error)


NOTEBOOK = [
    "import jax\nimport jax.numpy as jnp\nimport typed_xmap as tx\n"
    'a = tx.named(jnp.ones((2, 3)), ["batch", "embed"])\nb = tx.named(jnp.ones((2, 4)), ["batch", "embed"])',
    "def layer(a, b):\n    return a + b  # the user's line\n\n\nlayer(a, b)",
    "jax.jit(layer)(a, b)",
    'params = {"w": tx.named(jnp.zeros((64, 64)), ["embed", "mlp"]), "b": [tx.named(jnp.ones(64), ["mlp"])]}\nparams',
    'tx.named(jnp.arange(3.0), ["embed"])',
]


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.slow
def test_a_notebook_shows_the_user_line_and_the_message_and_a_params_dict_one_line_an_array():
    """In a Jupyter kernel (IPython shows the frame that raised even when JAX marks it hidden): a shape error's
    traceback ends at the user's line and the message, eagerly and under ``jax.jit``; a dict of NamedArrays
    displays one summary line per array, a NamedArray alone its values."""
    nbclient = pytest.importorskip("nbclient", reason="the test extra installs nbclient and ipykernel")
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK])
    nbclient.NotebookClient(notebook, kernel_name="python3", allow_errors=True, timeout=300).execute()
    outputs = [cell.outputs for cell in notebook.cells]
    assert outputs[0] == [], outputs[0]
    for cell in (1, 2):
        (error,) = outputs[cell]
        shown = _strip("\n".join(error["traceback"]))
        assert error["ename"] == "NamedShapeError" and "typed_xmap" not in shown.replace("typed_xmap as tx", ""), shown
        last_frame = shown.rsplit("Cell In[", 1)[1]
        assert "return a + b  # the user's line" in last_frame, shown
        assert shown.rstrip().splitlines()[-1].startswith("NamedShapeError: ") and "Fix:" in shown, shown
    (params,) = outputs[3]
    assert params["data"]["text/plain"].splitlines() == [
        "{'w': NamedArray(float32[embed=64, mlp=64]) min=0 max=0 mean=0,",
        " 'b': [NamedArray(float32[mlp=64]) min=1 max=1 mean=1]}",
    ], params
    (alone,) = outputs[4]
    assert alone["data"]["text/plain"] == "NamedArray(float32[embed=3], [0., 1., 2.])", alone


def test_the_notebook_handler_drops_our_frames_and_leaves_a_users_own_handler(monkeypatch):
    """``user_frames`` keeps the user's frames of an unfiltered traceback; ``install`` sets the IPython handler
    only where the shell has no handler of the user's."""
    import sys
    import types

    from typed_xmap._ops import _ipython

    jax.config.update("jax_traceback_filtering", "off")
    try:
        error = _raised(lambda: _mismatched(A, B))
    finally:
        jax.config.update("jax_traceback_filtering", "auto")
    assert _our_frames(error)
    kept = traceback.extract_tb(_ipython.user_frames(error.__traceback__))
    assert kept[-1].line == "return a + b  # the user's line"
    assert not [f for f in kept if os.path.abspath(f.filename).startswith(PACKAGE)]

    class Shell:
        custom_exceptions: tuple[type, ...] = (KeyError,)
        handled = None

        def set_custom_exc(self, exceptions, handler):
            self.handled = exceptions

    shell = Shell()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    _ipython.install()
    assert shell.handled is None
    shell.custom_exceptions = ()
    _ipython.install()
    assert shell.handled == (tx.NamedShapeError,)
