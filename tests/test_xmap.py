"""tx.xmap without resources: spec forms, prefixes, sizes, out_axes rule, lowering API, transforms, nesting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, NamedShapeError, f32, xmap

A = np.arange(32.0, dtype=np.float32).reshape(8, 4)
B = np.arange(24.0, dtype=np.float32).reshape(4, 6)


def test_seed_matmul():
    f = xmap(jnp.vdot, in_axes=({0: "left"}, {1: "right"}), out_axes=["left", "right", ...])
    np.testing.assert_allclose(f(A, B), A @ B)


def test_spec_forms_and_dict_out_positions():
    x = np.arange(2 * 3 * 4.0).reshape(2, 3, 4)
    # dict spec on dims 0 and 2; outputs insert in ascending position order: {0:'i', 2:'k'} on (3,) -> (I, 3, K)
    f = xmap(lambda v: v * 2, in_axes={0: "i", 2: "k"}, out_axes={0: "i", 2: "k"})
    np.testing.assert_allclose(f(x), 2 * x)
    # a list spec with None skips a dim; transposing by listing names in another order
    g = xmap(lambda v: v, in_axes=["i", None, "k"], out_axes=["k", "i", ...])
    np.testing.assert_allclose(g(x), np.transpose(x, (2, 0, 1)))


def test_tree_prefixes():
    f = xmap(
        lambda d, s: {"sum": d["a"] + d["b"] * s},
        in_axes=({"a": ["i", ...], "b": ["i", ...]}, {}),
        out_axes={"sum": ["i", ...]},
    )
    out = f({"a": A, "b": A}, 2.0)
    np.testing.assert_allclose(out["sum"], 3 * A)
    # one leaf covers the whole argument tuple, and a top-level list of specs counts as a tuple
    np.testing.assert_allclose(xmap(jnp.add, in_axes=["i", ...], out_axes=["i", ...])(A, A), 2 * A)
    np.testing.assert_allclose(xmap(jnp.add, in_axes=[["i", ...], ["i", ...]], out_axes=["i", ...])(A, A), 2 * A)


def test_axis_sizes_and_axis_index():
    f = xmap(lambda: lax.axis_index("i"), in_axes=(), out_axes=["i", ...], axis_sizes={"i": 6})
    np.testing.assert_array_equal(f(), np.arange(6))


def test_broadcast_by_name_and_listed_axis_broadcast():
    # v carries i, w carries j: their sum carries both (broadcast by name)
    f = xmap(jnp.add, in_axes=(["i", ...], ["j", ...]), out_axes=["i", "j", ...])
    np.testing.assert_allclose(f(A[:, 0], B[0]), A[:, :1] + B[:1, :])
    # an output that lacks a listed axis is broadcast along it
    g = xmap(lambda v: jnp.sum(v, axis="i"), in_axes=["i", ...], out_axes=["i", ...])
    np.testing.assert_allclose(g(A), np.broadcast_to(A.sum(0), A.shape))
    h = xmap(lambda v: v, in_axes={}, out_axes=["i", ...], axis_sizes={"i": 3})
    np.testing.assert_allclose(h(A[0]), np.broadcast_to(A[0], (3, 4)))


def test_named_collectives():
    f = xmap(
        lambda v: (lax.psum(v, "i"), jnp.mean(v, axis="i"), lax.pmax(v, "i"), lax.all_gather(v, "i"), lax.psum(1, "i")),
        in_axes=["i", ...],
        out_axes=([...], [...], [...], [...], [...]),
    )
    total, mean, top, gathered, size = f(A)
    np.testing.assert_allclose(total, A.sum(0))
    np.testing.assert_allclose(mean, A.mean(0))
    np.testing.assert_allclose(top, A.max(0))
    np.testing.assert_allclose(gathered, A)
    assert int(size) == 8


def test_untyped_body_sees_positional_elements():
    seen = []

    def body(v, w):
        seen.append((v.shape, w.shape))
        return jnp.tensordot(v, w, 1)

    f = xmap(body, in_axes=({0: "b"}, {}), out_axes=["b", ...])
    np.testing.assert_allclose(f(A, B), A @ B)
    assert seen == [((4,), (4, 6))]


def test_named_array_arguments_without_in_axes():
    x = tx.named(A, ["batch", "feat"])
    f = xmap(lambda v: v * 2, out_axes=["feat", "batch", ...])
    np.testing.assert_allclose(f(x), 2 * A.T)
    # a NamedArray's positional dims can still be named by in_axes
    y = tx.named(np.ones((3, 8, 4), np.float32), {1: "batch", 2: "feat"})  # positional (3,)
    g = xmap(lambda v: lax.psum(v, "feat"), in_axes=(["p", ...],), out_axes=["p", "batch", ...])
    np.testing.assert_allclose(g(y), np.full((3, 8), 4.0))


def test_typed_body_receives_named_arrays():
    seen = []

    def body(x: NamedArray[f32, "batch feat"], w: NamedArray[f32, "feat"]):
        seen.append((x.named_shape, x.shape))
        return x * w

    f = xmap(body, in_axes=(["batch", "feat", ...], ["feat", ...]), out_axes=["batch", "feat", ...])
    np.testing.assert_allclose(f(A, A[0]), A * A[0])
    assert seen == [({"batch": 8, "feat": 4}, ())]


def test_typed_body_annotation_violation():
    def body(x: NamedArray[f32, "batch"]):
        return x

    f = xmap(body, in_axes=(["batch", "feat", ...],), out_axes=["batch", "feat", ...])
    with pytest.raises(NamedShapeError, match=r"carries undeclared 'feat'"):
        f(A)


def test_out_axes_must_list_carried_axes():
    f = xmap(lambda v: v * 2, in_axes=["i", "j", ...], out_axes=["i", ...])
    with pytest.raises(NamedShapeError) as info:
        f(A)
    assert str(info.value) == (
        "the output (out_axes = ['i', ...]) of <lambda> carries named axis 'j', which its out_axes do not list; "
        "an output must list every named axis it carries. Fix: list it, e.g. out_axes ['i', 'j', ...], or reduce "
        "it in the body (jax.lax.psum(y, 'j') or jnp.sum(y, axis='j'))"
    )
    g = xmap(lambda v: {"a": v, "b": v}, in_axes=["i", ...], out_axes={"a": ["i", ...], "b": [...]})
    with pytest.raises(
        NamedShapeError, match=r"the output \(out_axes\['b'\] = \[...\]\) of <lambda> carries named axis 'i'"
    ):
        g(A)


def test_lower_api():
    f = xmap(jnp.vdot, in_axes=({0: "left"}, {1: "right"}), out_axes=["left", "right", ...])
    lowered = f.lower(A, B)
    assert "dot_general" in lowered.as_text()
    assert lowered.compiler_ir() is not None
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(A, B), A @ B)
    assert compiled.cost_analysis() is not None
    abstract = f.lower(jax.ShapeDtypeStruct((8, 4), jnp.float32), jax.ShapeDtypeStruct((4, 6), jnp.float32))
    np.testing.assert_allclose(abstract.compile()(A, B), A @ B)
    with pytest.raises(TypeError):
        compiled(A, B.astype(np.int32))


def test_caching_does_not_retrace():
    traces = []

    def body(v):
        traces.append(1)
        return v + 1

    f = xmap(body, in_axes=["i", ...], out_axes=["i", ...])
    f(A)
    f(A + 1)
    assert len(traces) == 1


def test_jit_of_xmap_and_xmap_of_jit():
    f = xmap(jnp.vdot, in_axes=({0: "left"}, {1: "right"}), out_axes=["left", "right", ...])
    np.testing.assert_allclose(jax.jit(f)(A, B), A @ B)
    np.testing.assert_allclose(jax.jit(lambda a, b: f(a, b) * 2)(A, B), 2 * A @ B)
    g = xmap(jax.jit(lambda v: lax.psum(v, "i")), in_axes=["i", ...], out_axes=[...])
    np.testing.assert_allclose(g(A), A.sum(0))


def test_grad_through_broadcast_input_sums_over_named_axes():
    w = np.arange(4.0, dtype=np.float32)

    def loss(x, w):
        per = xmap(lambda xi, wv: jnp.vdot(xi, wv), in_axes=(["b", ...], {}), out_axes=["b", ...])(x, w)
        return jnp.sum(per**2)

    gx, gw = jax.grad(loss, argnums=(0, 1))(A, w)
    ref_x, ref_w = jax.grad(lambda x, w: jnp.sum((x @ w) ** 2), argnums=(0, 1))(A, w)
    np.testing.assert_allclose(gx, ref_x, rtol=1e-5)
    np.testing.assert_allclose(gw, ref_w, rtol=1e-5)


def test_jvp_checkpoint_vmap_of_xmap():
    f = xmap(lambda v: jnp.sin(v) * lax.psum(v, "i"), in_axes=["i", ...], out_axes=["i", ...])
    ref = lambda x: jnp.sin(x) * x.sum(0)
    _primal, tangent = jax.jvp(f, (A,), (jnp.ones_like(A),))
    _ref_primal, ref_tangent = jax.jvp(ref, (A,), (jnp.ones_like(A),))
    np.testing.assert_allclose(tangent, ref_tangent, rtol=1e-5)
    np.testing.assert_allclose(
        jax.grad(lambda x: jax.checkpoint(f)(x).sum())(A), jax.grad(lambda x: ref(x).sum())(A), rtol=1e-5
    )
    stacked = np.stack([A, A + 1])
    np.testing.assert_allclose(jax.vmap(f)(stacked), jax.vmap(ref)(stacked), rtol=1e-5)


def test_xmap_of_grad_and_vmap_names_visible():
    f = xmap(jax.grad(lambda v: jnp.sum(v**2)), in_axes=["i", ...], out_axes=["i", ...])
    np.testing.assert_allclose(f(A), 2 * A)
    # a vmap axis name is visible to collectives inside xmap
    g = jax.vmap(xmap(lambda v: lax.psum(v, "outer"), in_axes=["i", ...], out_axes=["i", ...]), axis_name="outer")
    np.testing.assert_allclose(g(np.stack([A, A])), np.stack([2 * A, 2 * A]))


def test_nested_xmap_uses_outer_names():
    inner = xmap(lambda v: lax.psum(v, "i") + v, in_axes=["j", ...], out_axes=["j", ...])
    outer = xmap(inner, in_axes=["i", ...], out_axes=["i", ...])
    np.testing.assert_allclose(outer(A), A.sum(0, keepdims=True) + A)


def test_nested_xmap_shadowing_is_an_error():
    inner = xmap(lambda v: v, in_axes=["i", ...], out_axes=["i", ...])
    outer = xmap(inner, in_axes=["i", ...], out_axes=["i", ...])
    with pytest.raises(NamedShapeError, match=r"reuses axis 'i', which an enclosing xmap already maps"):
        outer(np.ones((2, 3, 4)))


def test_control_flow_with_collectives():
    def body(v):
        return lax.fori_loop(0, 3, lambda _, c: c + lax.psum(v, "i"), jnp.zeros_like(v))

    f = xmap(body, in_axes=["i", ...], out_axes=[...])
    np.testing.assert_allclose(f(A), 3 * A.sum(0))


def test_donate_and_backend():
    f = xmap(lambda v: v + 1, in_axes=["i", ...], out_axes=["i", ...], donate_argnums=0, backend="cpu")
    np.testing.assert_allclose(f(jnp.asarray(A)), A + 1)


def test_keyword_arguments_rejected():
    f = xmap(lambda v: v, in_axes=["i", ...], out_axes=["i", ...])
    with pytest.raises(TypeError, match="positional arguments only"):
        f(v=A)


# -- found in review: typed bodies, loops, output containers ------------------------------------


def test_typed_body_other_parameters_get_plain_values():
    def body(x: NamedArray[f32, "i j"], c: float) -> NamedArray[f32, "i j"]:
        assert not isinstance(c, tx.NamedArray)
        return x * c

    out = xmap(body, in_axes=(["i", "j"], {}), out_axes=["i", "j"])(A, 2.0)
    np.testing.assert_allclose(out, 2 * A)


def test_named_inside_a_typed_body_keeps_the_mapped_axes():
    def body(x: NamedArray[f32, "i", "n"]) -> NamedArray[f32, "i"]:
        y = tx.named(x, ["p"])
        assert y.named_shape == {"p": A.shape[1], "i": A.shape[0]}
        return tnp.sum(y, "p")

    np.testing.assert_allclose(xmap(body, in_axes=["i", None], out_axes=["i"])(A), A.sum(1))


def test_lax_collectives_on_named_arrays_update_the_named_shape():
    def total(x: NamedArray[f32, "i j"]) -> NamedArray[f32, "j"]:
        return jax.lax.psum(x, "i")

    def centred(x: NamedArray[f32, "i j"]) -> NamedArray[f32, "i j"]:
        mean = jax.lax.pmean(x, "i")
        assert mean.named_shape == {"j": A.shape[1]}
        return x - mean

    np.testing.assert_allclose(xmap(total, in_axes=["i", "j"], out_axes=["j"])(A), A.sum(0))
    np.testing.assert_allclose(xmap(centred, in_axes=["i", "j"], out_axes=["i", "j"])(A), A - A.mean(0))


def test_serial_loop_over_an_axis_only_axis_sizes_defines():
    f = xmap(
        lambda c: c + jnp.zeros(()),
        in_axes=({},),
        out_axes=["i", ...],
        axis_sizes={"i": 8},
        axis_resources={"i": tx.SerialLoop(2)},
    )
    np.testing.assert_allclose(f(np.float32(1.0)), np.ones(8))


def test_a_list_return_takes_a_list_of_out_axes():
    f = xmap(lambda a: [a, a * 2], in_axes=["i"], out_axes=[["i"], ["i"]])
    _first, second = f(np.arange(3.0, dtype=np.float32))
    np.testing.assert_allclose(second, 2 * np.arange(3.0))
