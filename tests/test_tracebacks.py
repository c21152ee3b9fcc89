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
