"""A NamedArray in a notebook (HTML), a rich console and treescope: one line of names, sizes, dtype, statistics."""

import jax
import jax.numpy as jnp
import pytest

import typed_xmap as tx

X = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "embed"])
LINE = "NamedArray(float32[batch=2, embed=3]) min=0 max=5 mean=2.5"


def _html(x):
    """What Jupyter shows of ``x`` (its mime bundle's HTML); the bundle's text is the repr."""
    bundle = x._repr_mimebundle_()
    assert bundle["text/plain"] == repr(x)
    return bundle["text/html"]


def test_html_shows_the_summary_line_and_unfolds_to_the_values():
    shown = _html(X)
    assert f"<summary><code>{LINE}</code></summary>" in shown
    assert "[[0., 1., 2.]," in shown


def test_html_escapes_and_a_traced_value_shows_its_shape_only():
    seen = []
    jax.jit(lambda v: seen.append(_html(v)) or v)(tx.named(jnp.ones(2, jnp.int32), ["i"]))
    assert seen[0].startswith("<details><summary><code>NamedArray(int32[i=2])</code>")
    tagged = jax.tree.map(lambda a: "<b>", {"w": X})["w"]  # a leaf jax.tree.map made: shown, escaped
    shown = "<code>NamedArray(&#x27;&lt;b&gt;&#x27;, axes=(&#x27;batch&#x27;, &#x27;embed&#x27;))</code>"
    assert shown in _html(tagged)


def test_rich_prints_one_line():
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(X)
    assert console.export_text().strip() == LINE


def test_boolean_and_large_arrays_summarize():
    mask = tx.named(jnp.arange(4) < 3, ["seq"])
    assert _html(mask).startswith("<details><summary><code>NamedArray(bool[seq=4]) true=3</code>")
    big = tx.named(jnp.zeros((100, 100)), ["a", "b"])
    assert "NamedArray(float32[a=100, b=100]) min=0 max=0 mean=0" in _html(big)


def test_treescope_renders_the_summary_line_in_a_tree():
    treescope = pytest.importorskip("treescope")
    text = treescope.render_to_text({"w": X})
    assert f"<{LINE}>" in text
    assert "Rich HTML" not in text  # shown once: treescope's rendering, not the notebook HTML under it
    assert "'w'" in text


def test_treescope_draws_the_array_by_axis_name():
    treescope = pytest.importorskip("treescope")
    assert "treescope" in treescope.render_to_html(treescope.render_array(X))
    adapter = X.__treescope_ndarray_adapter__()
    axes = adapter.get_axis_info_for_array_data(X)
    assert [(getattr(a, "axis_name", None), a.size) for a in axes] == [("batch", 2), ("embed", 3)]
    data, mask = adapter.get_array_data_with_truncation(tx.named(jnp.arange(10.0), ["seq"]), None, (2,))
    assert data.tolist() == [0.0, 1.0, 0.0, 8.0, 9.0] and mask.tolist() == [True, True, False, True, True]
