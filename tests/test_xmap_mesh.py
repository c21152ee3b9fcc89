"""tx.xmap with axis_resources on the 8-device emulated mesh: Explicit and Auto axes, partitioned HLO."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx
from typed_xmap import AxisResourceConflict, NamedArray, NamedShapeError, f32, xmap

A = np.arange(32.0, dtype=np.float32).reshape(8, 4)
B = np.arange(24.0, dtype=np.float32).reshape(4, 6)


@pytest.fixture(params=["explicit", "auto"])
def axis_type(request):
    return AxisType.Explicit if request.param == "explicit" else AxisType.Auto


@pytest.fixture
def mesh(axis_type):
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(axis_type,) * 2)
    with jax.set_mesh(mesh):
        yield mesh


def spec(array):
    """The array's PartitionSpec padded to its rank (Auto meshes drop trailing Nones)."""
    parts = tuple(array.sharding.spec)
    return P(*(parts + (None,) * (array.ndim - len(parts))))


def entry_params(lowered):
    """The per-device parameter shapes of the compiled (partitioned) HLO module."""
    entry = next(line for line in lowered.compile().as_text().splitlines() if line.startswith("ENTRY"))
    return re.findall(r"f32\[([\d,]*)\]", entry)


def test_seed_matmul_on_2x2_mesh(axis_type):
    mesh = jax.make_mesh((2, 2), ("x", "y"), axis_types=(axis_type,) * 2, devices=jax.devices()[:4])
    f = xmap(
        jnp.vdot,
        in_axes=({0: "left"}, {1: "right"}),
        out_axes=["left", "right", ...],
        axis_resources={"left": "x", "right": "y"},
    )
    with jax.set_mesh(mesh):
        out = f(A, B)
        np.testing.assert_allclose(out, A @ B)
        assert out.sharding.spec == P("x", "y")
        # each device holds a quarter of the result and half of each operand
        assert entry_params(f.lower(A, B)) == ["4,4", "4,3", "4,3"]
        assert "dot(" in f.lower(A, B).compile().as_text()


def regression_untyped(x, w, y):
    pred = lax.psum(x * w, "inp")
    return lax.pmean(lax.psum((pred - y) ** 2, "out"), "batch")


def regression_typed(x: NamedArray[f32, "batch inp"], w: NamedArray[f32, "inp out"], y: NamedArray[f32, "batch out"]):
    pred = tx.named(lax.psum((x * w).data, "inp"), [])  # mapped axes: batch, out
    err = (pred.data - y.data) ** 2
    return lax.pmean(lax.psum(err, "out"), "batch")


@pytest.mark.parametrize("body", [regression_untyped, regression_typed])
def test_regression_loss_under_mesh(mesh, body):
    rng = np.random.default_rng(0)
    x, w, y = (rng.normal(size=s).astype(np.float32) for s in ((8, 4), (4, 6), (8, 6)))
    loss = xmap(
        body,
        in_axes=(["batch", "inp", ...], ["inp", "out", ...], ["batch", "out", ...]),
        out_axes=[...],
        axis_resources={"batch": "x", "out": "y"},
    )
    expected = np.mean(np.sum((x @ w - y) ** 2, axis=1))
    np.testing.assert_allclose(loss(x, w, y), expected, rtol=1e-5)
    text = loss.lower(x, w, y).compile().as_text()
    assert text.count("all-reduce(") >= 2
    assert entry_params(loss.lower(x, w, y))[:3] == ["2,4", "4,3", "2,3"]
    grads = jax.grad(lambda w: loss(jnp.asarray(x), w, jnp.asarray(y)))(jnp.asarray(w))
    np.testing.assert_allclose(grads, 2 * x.T @ (x @ w - y) / 8, rtol=1e-4)


def test_tuple_resources_and_presharded_inputs(mesh):
    f = xmap(lambda v: v * 2, in_axes=["i", ...], out_axes=["i", ...], axis_resources={"i": ("x", "y")})
    placed = jax.device_put(A, NamedSharding(mesh, P(("x", "y"))))
    out = f(placed)
    assert spec(out) == P(("x", "y"), None)
    np.testing.assert_allclose(out, 2 * A)
    assert entry_params(f.lower(placed)) == ["1,4", "1,4"]


def test_inputs_sharded_otherwise_are_resharded(mesh, axis_type):
    f = xmap(lambda v: v + 1, in_axes=["i", ...], out_axes=["i", ...], axis_resources={"i": "x"})
    other = jax.device_put(A, NamedSharding(mesh, P(None, "y")))
    out = f(other)
    # The named dim is placed where its name's resources put it; the positional dim no name covers is the
    # compiler's (PartitionSpec.UNCONSTRAINED, never forced replicated): on an Auto mesh it keeps the
    # argument's 'y'. An Explicit type needs every dim decided, so there it comes back replicated.
    assert spec(out) == (P("x", None) if axis_type == AxisType.Explicit else P("x", "y"))
    np.testing.assert_allclose(out, A + 1)


def test_jit_and_transforms_under_mesh(mesh):
    f = xmap(
        lambda v, w: jnp.vdot(v, w) * lax.psum(1.0, "l"),
        in_axes=({0: "l"}, {1: "r"}),
        out_axes=["l", "r", ...],
        axis_resources={"l": "x", "r": "y"},
    )
    a, b = jnp.asarray(A), jnp.asarray(B)
    out = jax.jit(f)(a, b)
    np.testing.assert_allclose(out, 8 * A @ B)
    assert out.sharding.spec == P("x", "y")
    np.testing.assert_allclose(jax.jit(lambda a, b: f(a, b).sum())(a, b), 8 * (A @ B).sum())
    grad = jax.grad(lambda a: f(a, b).sum())(a)
    np.testing.assert_allclose(grad, 8 * np.broadcast_to(B.sum(1), A.shape), rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(f, in_axes=(0, None))(jnp.stack([a, a]), b)[1], 8 * A @ B)


@pytest.mark.filterwarnings("ignore:.*context manager has been deprecated:DeprecationWarning")
def test_legacy_with_mesh(axis_type):
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(axis_type,) * 2)
    f = xmap(jnp.vdot, in_axes=({0: "l"}, {1: "r"}), out_axes=["l", "r", ...], axis_resources={"l": "x", "r": "y"})
    with mesh:
        out = f(A, B)
    np.testing.assert_allclose(out, A @ B)
    assert out.sharding.spec == P("x", "y")


def test_shared_resource_when_axes_never_meet(mesh):
    f = xmap(
        lambda q, u: jnp.sum(q, axis="a") + jnp.sum(u, axis="b"),
        in_axes=(["a", ...], ["b", ...]),
        out_axes=[...],
        axis_resources={"a": "x", "b": "x"},
    )
    np.testing.assert_allclose(f(A, A), 2 * A.sum(0))


def test_nested_xmap_on_mesh(mesh):
    inner = xmap(lambda v: v * 2 + lax.psum(v, "a"), in_axes=["b", ...], out_axes=["b", ...], axis_resources={"b": "y"})
    outer = xmap(inner, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    out = outer(A)
    np.testing.assert_allclose(out, 2 * A + A.sum(0))
    assert out.sharding.spec[0] == "x"


@pytest.mark.parametrize("resources", [{"i": tx.SerialLoop(4)}, {"i": ("x", tx.SerialLoop(2))}])
def test_serial_loops(mesh, resources):
    w = np.arange(4.0, dtype=np.float32)
    f = xmap(
        lambda v, w: (jnp.sin(v) * w, jnp.sum(w)),
        in_axes=(["i", ...], {}),
        out_axes=(["i", ...], [...]),
        axis_resources=resources,
    )
    out, total = f(A, w)
    np.testing.assert_allclose(out, np.sin(A) * w, rtol=1e-6)
    np.testing.assert_allclose(total, w.sum())
    assert "while" in f.lower(A, w).as_text()


def test_named_serial_loop_context():
    f = xmap(lambda v: v * 2, in_axes=["i", ...], out_axes={1: "i"}, axis_resources={"i": "l"})
    with tx.serial_loop("l", 2):
        np.testing.assert_allclose(f(A), 2 * A.T)


# -- errors ------------------------------------------------------------------------------------


def test_conflict_in_an_input(mesh):
    f = xmap(lambda v: v, in_axes=["a", "b", ...], out_axes=["a", "b", ...], axis_resources={"a": "x", "b": "x"})
    with pytest.raises(AxisResourceConflict) as info:
        f(A)
    assert str(info.value) == (
        "axes 'a' and 'b' are both assigned to mesh axis 'x', but they meet in argument args[0] (in_axes = "
        "['a', 'b', ...]) of <lambda>: one value cannot be split over one mesh axis along two of its axes. "
        "Fix: assign 'b' to another mesh axis, or keep the two axes in separate values (reduce one of them first)"
    )


def test_conflict_in_an_intermediate(mesh):
    f = xmap(
        lambda q, u: jnp.sum(q + u),
        in_axes=(["a", ...], ["b", ...]),
        out_axes=[...],
        axis_resources={"a": "x", "b": "x"},
    )
    with pytest.raises(AxisResourceConflict, match=r"they meet in a value computed by `add` at .*test_xmap_mesh.py"):
        f(A, A)


def test_conflict_in_an_intermediate_inside_control_flow(mesh):
    def body(q, u):
        return lax.fori_loop(0, 2, lambda _, c: c + jnp.sum(q * u), 0.0)

    f = xmap(body, in_axes=(["a", ...], ["b", ...]), out_axes=[...], axis_resources={"a": "x", "b": ("y", "x")})
    with pytest.raises(AxisResourceConflict, match=r"axes 'a' and 'b' are both assigned to mesh axis 'x'.*`mul`"):
        f(A, A)


def test_conflict_in_an_output_broadcast(mesh):
    f = xmap(
        lambda q: q,
        in_axes=["a", ...],
        out_axes=["a", "b", ...],
        axis_sizes={"b": 4},
        axis_resources={"a": "x", "b": "x"},
    )
    with pytest.raises(AxisResourceConflict) as info:
        f(A)
    assert str(info.value) == (
        "the output (out_axes = ['a', 'b', ...]) of <lambda> is broadcast along axis 'b', which is assigned to mesh "
        "axis 'x', but the output is already partitioned along 'x' because it carries axis 'a'. Fix: drop 'b' from "
        "its out_axes, or assign 'b' to another mesh axis"
    )


def test_conflict_across_nested_xmaps(mesh):
    inner = xmap(lambda v: v * 2, in_axes=["b", ...], out_axes=["b", ...], axis_resources={"b": "x"})
    outer = xmap(inner, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    with pytest.raises(AxisResourceConflict, match=r"axes 'a' and 'b' are both assigned to mesh axis 'x'"):
        outer(A)


def test_not_divisible_by_name(mesh):
    f = xmap(lambda q: q, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": ("x", "y")})
    with pytest.raises(NamedShapeError) as info:
        f(A[:6])
    assert str(info.value) == (
        "axis 'a' has (global) size 6, which is not divisible by the 8 parts of its resources mesh axis 'x' (4) x "
        "mesh axis 'y' (2). Fix: pad 'a' to a multiple of 8, or assign it fewer resources"
    )
    g = xmap(lambda: lax.axis_index("i"), in_axes=(), out_axes=["i"], axis_sizes={"i": 5}, axis_resources={"i": "x"})
    with pytest.raises(NamedShapeError, match=r"axis 'i' has \(global\) size 5"):
        g()
    h = xmap(lambda q: q, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": tx.SerialLoop(3)})
    with pytest.raises(NamedShapeError, match=r"not divisible by the 3 parts .*SerialLoop\(3\) \(3 steps\)"):
        h(A)


def test_resource_not_in_scope(mesh):
    f = xmap(lambda q: q, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "z"})
    with pytest.raises(NamedShapeError, match=r"axis_resources\['a'\] = 'z', but the current mesh has axes 'x', 'y'"):
        f(A)


def test_resource_without_a_mesh():
    f = xmap(lambda q: q, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    with pytest.raises(NamedShapeError, match=r"no device mesh is set, so mesh axis 'x' is not in scope"):
        f(A)


def test_loop_errors(mesh):
    f = xmap(lambda q: lax.psum(q, "a"), in_axes=["a", ...], out_axes=[...], axis_resources={"a": tx.SerialLoop(2)})
    with pytest.raises(
        NamedShapeError, match=r"axis 'a' is assigned the serial loop SerialLoop\(2\), so it cannot be referenced"
    ):
        f(A)
    two = xmap(
        lambda q: q,
        in_axes=["a", "b", ...],
        out_axes=["a", "b", ...],
        axis_resources={"a": tx.SerialLoop(2), "b": tx.SerialLoop(2)},
    )
    with pytest.raises(NotImplementedError, match="only one loop per xmap"):
        two(A)
    before = xmap(lambda q: q, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": (tx.SerialLoop(2), "x")})
    with pytest.raises(NotImplementedError, match="a serial loop must be the last resource of an axis"):
        before(A)


def test_inner_xmap_sees_another_mesh(mesh):
    other = jax.make_mesh((8,), ("z",))

    def body(v):
        with jax.sharding.use_abstract_mesh(other.abstract_mesh):
            return xmap(lambda u: u, in_axes=["b", ...], out_axes=["b", ...])(v)

    f = xmap(body, in_axes=["a", ...], out_axes=["a", ...], axis_resources={"a": "x"})
    with pytest.raises(NamedShapeError, match="changing the physical mesh is not allowed inside xmap"):
        f(np.ones((8, 2, 3), np.float32))
