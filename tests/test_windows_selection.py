"""tnp.conv, max_pool, avg_pool, top_k, sort, argsort, tx.random.randint/categorical/permutation and the
*_like constructors with new axes: values and gradients equal to their JAX references, on NamedArrays in any
layout, per element inside xmap, and sharded by name on a 2x4 mesh."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp

RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


X = normal(2, 9, 8, 3)  # batch height width channels
W = normal(3, 2, 3, 5)  # kh kw channels out
IMAGE = ["batch", "height", "width", "channels"]
KERNEL = ["kh", "kw", "channels", "out"]
SPATIAL = {"height": "kh", "width": "kw"}
NHWC = ("NHWC", "HWIO", "NHWC")


def assert_values_and_gradients_equal(ours, theirs):
    """``ours(X, W)`` equals ``theirs(X, W)``, and so do their gradients in both under one random cotangent."""
    np.testing.assert_allclose(ours(X, W), theirs(X, W), rtol=1e-5, atol=1e-5)
    cotangent = normal(*theirs(X, W).shape)
    ours_grads = jax.grad(lambda x, w: (ours(x, w) * cotangent).sum(), argnums=(0, 1))(X, W)
    their_grads = jax.grad(lambda x, w: (theirs(x, w) * cotangent).sum(), argnums=(0, 1))(X, W)
    for a, b in zip(ours_grads, their_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def named_conv(x, w, **options):
    image, kernel = tx.named(x, IMAGE), tx.named(w, KERNEL)
    return tx.positional(tnp.conv(image, kernel, SPATIAL, "channels", **options), ["batch", "height", "width", "out"])


@pytest.mark.parametrize(
    ("options", "reference"),
    [
        ({}, {"window_strides": (1, 1), "padding": "VALID"}),
        (
            {"strides": {"height": 2}, "padding": "SAME", "dilation": {"width": 2}},
            {"window_strides": (2, 1), "padding": "SAME", "rhs_dilation": (1, 2)},
        ),
        (
            {"strides": 3, "padding": {"height": (1, 2), "width": 1}},
            {"window_strides": (3, 3), "padding": ((1, 2), (1, 1))},
        ),
    ],
    ids=["valid", "same-strided-dilated", "explicit-padding"],
)
def test_conv_values_and_gradients_equal_lax(options, reference):
    def ours(x, w):
        return named_conv(x, w, **options)

    def theirs(x, w):
        return lax.conv_general_dilated(x, w, dimension_numbers=NHWC, **reference)

    assert_values_and_gradients_equal(ours, theirs)


def test_conv_reads_any_layout_and_names_the_result():
    """The same convolution whatever order the data holds the axes in; the result is batch, out and spatial,
    laid out batch, spatial, out under a trace (NHWC: the new axes minor, as the layer norms and contractions
    after a patch stem want them); a concrete result in name order."""
    image = tx.named(np.transpose(X, (3, 1, 0, 2)), ["channels", "height", "batch", "width"])
    kernel = tx.named(np.transpose(W, (3, 2, 1, 0)), ["out", "channels", "kw", "kh"])
    layouts = []

    def conv(image, kernel):
        out = tnp.conv(image, kernel, SPATIAL, "channels")
        layouts.append(out.axes)
        return out

    result = jax.jit(conv)(image, kernel)
    assert layouts == [("batch", "height", "width", "out")]
    assert result.named_shape == {"batch": 2, "out": 5, "height": 7, "width": 7}
    assert tnp.conv(image, kernel, SPATIAL, "channels").axes == ("batch", "height", "out", "width")
    np.testing.assert_allclose(
        tx.positional(result, ["batch", "height", "width", "out"]), named_conv(X, W), rtol=1e-5, atol=1e-5
    )


def test_conv_in_one_and_three_dims_with_several_batch_and_output_axes():
    """Batch axes (and positional dims) merge into conv's batch dim, output axes into its feature dim."""
    signal = normal(4, 2, 10, 3)  # positional n, named batch seq channels
    kernel = normal(3, 3, 2, 2)  # taps channels heads head_dim
    result = tnp.conv(
        tx.named(signal, {1: "batch", 2: "seq", 3: "channels"}),
        tx.named(kernel, ["taps", "channels", "heads", "head_dim"]),
        {"seq": "taps"},
        "channels",
    )
    assert result.shape == (4,) and result.named_shape == {"batch": 2, "heads": 2, "head_dim": 2, "seq": 8}
    flat = lax.conv_general_dilated(
        signal.reshape(8, 10, 3), kernel.reshape(3, 3, 4), (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC")
    )
    expected = flat.reshape(4, 2, 8, 2, 2)
    np.testing.assert_allclose(
        tx.positional(result, {1: "batch", 2: "seq", 3: "heads", 4: "head_dim"}), expected, rtol=1e-5, atol=1e-5
    )
    volume, cube = normal(1, 5, 6, 4, 2), normal(2, 3, 2, 2, 3)
    named = tnp.conv(
        tx.named(volume, ["batch", "d", "h", "w", "c"]),
        tx.named(cube, ["kd", "kh", "kw", "c", "o"]),
        {"d": "kd", "h": "kh", "w": "kw"},
        "c",
    )
    reference = lax.conv_general_dilated(
        volume, cube, (1, 1, 1), "VALID", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")
    )
    np.testing.assert_allclose(tx.positional(named, ["batch", "d", "h", "w", "o"]), reference, rtol=1e-5, atol=1e-5)


def test_depthwise_conv_with_feature_groups():
    kernel = normal(3, 3, 1, 6)  # each of 3 channels -> 2 outputs
    named = tnp.conv(
        tx.named(X, IMAGE), tx.named(kernel, KERNEL), SPATIAL, "channels", feature_group_count=3, padding="SAME"
    )
    reference = lax.conv_general_dilated(X, kernel, (1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=3)
    np.testing.assert_allclose(tx.positional(named, ["batch", "height", "width", "out"]), reference, rtol=1e-5)


def test_conv_per_element_inside_xmap():
    def body(x, w):
        return tnp.conv(x, w, SPATIAL, "channels", padding="SAME")

    kernel = normal(3, 3, 3, 5)
    conv = tx.xmap(body, in_axes=([*IMAGE, ...], [*KERNEL, ...]), out_axes=["batch", "height", "width", "out", ...])
    expected = lax.conv_general_dilated(X, kernel, (1, 1), "SAME", dimension_numbers=NHWC)
    np.testing.assert_allclose(conv(X, kernel), expected, rtol=1e-5, atol=1e-5)
    strided = tx.xmap(
        lambda x, w: tnp.conv(x, w, SPATIAL, "channels", strides=2, padding="SAME"),
        in_axes=([*IMAGE, ...], [*KERNEL, ...]),
        out_axes=["batch", "height", "width", "out", ...],
    )
    with pytest.raises(tx.NamedShapeError, match="is an enclosing xmap level of size 9"):
        strided(X, kernel)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_conv_sharded_by_name(axis_type):
    """Batch on data and output features on model: the result keeps both placements, values unchanged."""
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)
    kernel = normal(3, 2, 3, 8)
    with jax.set_mesh(mesh):
        image = tx.shard(tx.named(X, IMAGE), {"batch": "data"})
        weights = tx.shard(tx.named(kernel, KERNEL), {"out": "model"})
        result = jax.jit(lambda a, b: tnp.conv(a, b, SPATIAL, "channels"))(image, weights)
    assert tx.resources_of(result) == {"batch": "data", "out": "model"}
    np.testing.assert_allclose(
        tx.positional(result, ["batch", "height", "width", "out"]), named_conv(X, kernel), rtol=1e-5
    )


@pytest.mark.parametrize(
    ("name", "window", "strides", "padding", "reference"),
    [
        ("max", {"height": 3, "width": 2}, None, "VALID", ((1, 3, 2, 1), (1, 3, 2, 1), "VALID")),
        ("max", {"height": 3}, {"height": 2}, "SAME", ((1, 3, 1, 1), (1, 2, 1, 1), "SAME")),
        (
            "avg",
            {"height": 2, "width": 2},
            1,
            {"width": (1, 0)},
            ((1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (0, 0), (1, 0), (0, 0))),
        ),
    ],
    ids=["max-by-window", "max-same", "avg-padded"],
)
def test_pools_equal_reduce_window(name, window, strides, padding, reference):
    dims, steps, pads = reference
    pool = tnp.max_pool if name == "max" else tnp.avg_pool

    def ours(x):
        return tx.positional(pool(tx.named(x, IMAGE), window, strides, padding), IMAGE)

    def theirs(x):
        if name == "max":
            return lax.reduce_window(x, -jnp.inf, lax.max, dims, steps, pads)
        return lax.reduce_window(x, 0.0, lax.add, dims, steps, pads) / np.prod(dims)

    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: ours(x).sum())(X), jax.grad(lambda x: theirs(x).sum())(X), rtol=1e-6)


def test_top_k_equals_lax_top_k_with_gradients():
    probs = tx.named(X, IMAGE)
    values, indices = tnp.top_k(probs, 2, axis="channels", new_axis="choice")
    assert values.named_shape == {"batch": 2, "height": 9, "width": 8, "choice": 2}
    assert indices.dtype == jnp.int32
    expected_values, expected_indices = lax.top_k(X, 2)
    np.testing.assert_array_equal(tx.positional(values, ["batch", "height", "width", "choice"]), expected_values)
    np.testing.assert_array_equal(tx.positional(indices, ["batch", "height", "width", "choice"]), expected_indices)
    along_height = tnp.top_k(probs, 3, axis="height", new_axis="best")[0]
    np.testing.assert_array_equal(
        tx.positional(along_height, ["batch", "width", "channels", "best"]),
        lax.top_k(np.moveaxis(X, 1, -1), 3)[0],
    )
    ours = jax.grad(
        lambda x: tnp.top_k(tx.named(x, IMAGE), 2, "height", "best")[0].sum(("batch", "width", "channels", "best")).data
    )
    theirs = jax.grad(lambda x: lax.top_k(jnp.moveaxis(x, 1, -1), 2)[0].sum())
    np.testing.assert_array_equal(ours(X), theirs(X))


def test_sort_and_argsort_are_stable_and_equal_jnp():
    ties = np.array([[3, 1, 3, 1, 2], [0, 0, 1, 0, 1]], np.float32)
    value = tx.named(ties.T, ["seq", "batch"])
    np.testing.assert_array_equal(tx.positional(tnp.sort(value, "seq"), ["batch", "seq"]), np.sort(ties, axis=1))
    order = tnp.argsort(value, "seq")
    assert order.dtype == jnp.int32
    np.testing.assert_array_equal(tx.positional(order, ["batch", "seq"]), np.argsort(ties, axis=1, kind="stable"))
    grads = jax.grad(
        lambda x: (
            (tnp.sort(tx.named(x, ["seq", "batch"]), "seq") * tx.named(np.arange(5.0), ["seq"]))
            .sum(("seq", "batch"))
            .data
        )
    )
    expected = jax.grad(lambda x: (jnp.sort(x, axis=0) * jnp.arange(5.0)[:, None]).sum())
    np.testing.assert_array_equal(grads(ties.T), expected(ties.T))


def test_sort_and_top_k_per_element_inside_xmap():
    sort = tx.xmap(lambda v: tnp.sort(v, "seq"), in_axes=(["batch", "seq", ...],), out_axes=["batch", ...])
    np.testing.assert_array_equal(sort(X[:, :, 0, 0]), np.sort(X[:, :, 0, 0], axis=1))
    top = tx.xmap(
        lambda v: tnp.top_k(v, 2, "seq", "best")[1], in_axes=(["batch", "seq", ...],), out_axes=["batch", ...]
    )
    np.testing.assert_array_equal(top(X[:, :, 0, 0]), lax.top_k(X[:, :, 0, 0], 2)[1])


def test_random_draws_equal_jax_random():
    key = jax.random.key(3)
    ints = tx.random.randint(key, {"tokens": 6, "batch": 2}, 0, 50)
    np.testing.assert_array_equal(tx.positional(ints, ["batch", "tokens"]), jax.random.randint(key, (2, 6), 0, 50))
    logits = normal(4, 7)  # batch vocab
    drawn = tx.random.categorical(key, tx.named(logits.T, ["vocab", "batch"]), "vocab")  # any layout: one draw
    assert drawn.named_shape == {"batch": 4} and drawn.dtype == jnp.int32
    np.testing.assert_array_equal(tx.positional(drawn, ["batch"]), jax.random.categorical(key, logits, axis=1))
    shuffled = tx.random.permutation(key, tx.named(X, IMAGE), "height")
    expected = jax.random.permutation(key, X, axis=1, independent=False)
    np.testing.assert_array_equal(tx.positional(shuffled, IMAGE), expected)


def test_like_constructors_add_axes_and_keep_placement():
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    with jax.set_mesh(mesh):
        hidden = tx.shard(tx.named(X[:, 0, 0, :2], ["batch", "embed"]), {"batch": "data"})
        carry = tnp.zeros_like(hidden, new_axes={"layers": 3})
        filled = tnp.full_like(hidden, 7, jnp.int32, new_axes={"slot": 2})
    assert carry.named_shape == {"layers": 3, "batch": 2, "embed": 2}
    assert tx.resources_of(carry) == {"batch": "data"}
    assert filled.dtype == jnp.int32 and bool((filled == 7).all(("slot", "batch", "embed")).data)
    assert tnp.ones_like(hidden).named_shape == hidden.named_shape


@pytest.mark.parametrize("placement", [{"batch": "data"}, {"batch": "data", "seq": "model"}], ids=["batch", "seq"])
@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_sort_argsort_top_k_gradients_on_a_mesh(axis_type, placement):
    """Under jax.grad on a 2x4 mesh, the sorted axis split or not: gradients equal jnp's unsharded ones (JAX's
    own sort rule differentiates through an unplaced iota, which Explicit axes refuse), the placement kept."""
    values = normal(8, 12)  # batch seq
    weights = normal(12)

    expected = {
        "sort": lambda x: (jnp.sort(x, axis=1) * weights).sum(),
        "argsort": lambda x: (jnp.argsort(x, axis=1, stable=True) * x).sum(),
        "top_k": lambda x: (lax.top_k(x, 3)[0] ** 2).sum(),
    }
    seq = tx.named(weights, ["seq"])
    ours = {
        "sort": lambda x: tnp.sort(x, "seq") * seq,
        "argsort": lambda x: tnp.argsort(x, "seq") * x,
        "top_k": lambda x: tnp.top_k(x, 3, "seq", "best")[0] ** 2,
    }
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)
    with jax.set_mesh(mesh):
        x = tx.shard(tx.named(values, ["batch", "seq"]), placement)
        for name, loss in ours.items():
            value, grad = jax.jit(jax.value_and_grad(lambda v, loss=loss: (out := loss(v)).sum(tuple(out.axes)).data))(
                x
            )
            reference, reference_grad = jax.value_and_grad(expected[name])(values)
            np.testing.assert_allclose(value, reference, rtol=1e-5, err_msg=name)
            np.testing.assert_array_equal(tx.positional(grad, ["batch", "seq"]), reference_grad, err_msg=name)
        results = {
            "sort": tnp.sort(x, "seq"),
            "argsort": tnp.argsort(x, "seq"),
            "permutation": tx.random.permutation(jax.random.key(1), x, "seq"),  # also refused along a split dim
        }
    np.testing.assert_array_equal(tx.positional(results["sort"], ["batch", "seq"]), np.sort(values, axis=1))
    np.testing.assert_array_equal(tx.positional(results["argsort"], ["batch", "seq"]), np.argsort(values, axis=1))
    expected_shuffle = jax.random.permutation(jax.random.key(1), values, axis=1, independent=False)
    np.testing.assert_array_equal(tx.positional(results["permutation"], ["batch", "seq"]), expected_shuffle)
    if axis_type == AxisType.Explicit:  # the compiler places Auto axes
        assert tx.resources_of(grad) == placement
        assert all(tx.resources_of(r) == placement for r in results.values())


@pytest.mark.parametrize(
    ("options", "reference"),
    [
        ({}, {"strides": (1, 1), "padding": "VALID"}),
        ({"strides": 2, "padding": "SAME"}, {"strides": (2, 2), "padding": "SAME"}),
        (
            {"strides": {"height": 2}, "padding": "VALID", "dilation": {"width": 2}},
            {"strides": (2, 1), "padding": "VALID", "rhs_dilation": (1, 2)},
        ),
        (
            {"strides": 3, "padding": {"height": (1, 2), "width": 2}},
            {"strides": (3, 3), "padding": ((1, 2), (2, 2))},
        ),
    ],
    ids=["valid", "same-strided", "valid-dilated", "explicit-padding"],
)
def test_conv_transpose_values_and_gradients_equal_lax(options, reference):
    """tnp.conv_transpose is lax.conv_transpose by name, in any layout: values, result lengths and gradients."""

    def ours(x, w):
        image = tx.named(
            np.transpose(x, (3, 1, 0, 2)) if isinstance(x, np.ndarray) else jnp.transpose(x, (3, 1, 0, 2)),
            ["channels", "height", "batch", "width"],
        )
        result = tnp.conv_transpose(image, tx.named(w, KERNEL), SPATIAL, "channels", **options)
        return tx.positional(result, ["batch", "height", "width", "out"])

    def theirs(x, w):
        return lax.conv_transpose(x, w, dimension_numbers=NHWC, **reference)

    assert_values_and_gradients_equal(ours, theirs)


def test_conv_transpose_upsamples_a_decoder_step_inside_xmap_and_on_a_mesh():
    """A decoder's 2x upsampling: strides=2, 'SAME' doubles height and width; per element inside xmap (stride 1
    keeps the levels' sizes) and sharded by name on Explicit and Auto meshes."""
    upsampled = tnp.conv_transpose(
        tx.named(X, IMAGE), tx.named(W, KERNEL), SPATIAL, "channels", strides=2, padding="SAME"
    )
    assert upsampled.named_shape == {"batch": 2, "out": 5, "height": 18, "width": 16}
    body = tx.xmap(
        lambda x, w: tnp.conv_transpose(x, w, SPATIAL, "channels", padding="SAME"),
        in_axes=([*IMAGE, ...], [*KERNEL, ...]),
        out_axes=["batch", "height", "width", "out", ...],
    )
    expected = lax.conv_transpose(X, W, (1, 1), "SAME", dimension_numbers=NHWC)
    np.testing.assert_allclose(body(X, W), expected, rtol=1e-5, atol=1e-5)
    kernel = normal(3, 2, 3, 8)
    reference = lax.conv_transpose(X, kernel, (2, 2), "SAME", dimension_numbers=NHWC)
    for axis_type in (AxisType.Explicit, AxisType.Auto):
        mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)
        with jax.set_mesh(mesh):
            image = tx.shard(tx.named(X, IMAGE), {"batch": "data"})
            weights = tx.shard(tx.named(kernel, KERNEL), {"out": "model"})
            step = jax.jit(lambda a, b: tnp.conv_transpose(a, b, SPATIAL, "channels", strides=2, padding="SAME"))
            result = step(image, weights)
        assert tx.resources_of(result) == {"batch": "data", "out": "model"}
        np.testing.assert_allclose(tx.positional(result, ["batch", "height", "width", "out"]), reference, rtol=1e-5)


def test_conv_transpose_input_shorter_than_its_window_is_named():
    with pytest.raises(tx.NamedShapeError, match=r"axis 'height' has size 2 \(spread to 3 by stride 2\)"):
        tnp.conv_transpose(
            tx.named(X[:, :2], IMAGE),
            tx.named(normal(5, 2, 3, 5), KERNEL),
            SPATIAL,
            "channels",
            strides=2,
            padding={"height": (0, 1)},
        )


# -- issue 28: the vocabulary on a mesh, for every dtype ------------------------------------------------------

SELECTION_VALUES = {
    "uint8": np.array([[0, 3, 1, 2, 3, 255, 0, 7], [5, 0, 7, 1, 1, 0, 2, 2]], np.uint8),
    "int32": np.array([[-(2**31), 3, 1, 2**31 - 1, 3, 0, -(2**31), 7], [5, 0, 7, 1, 1, 0, 2, 2]], np.int32),
    "float32": np.array([[np.nan, 3, 1, 2, -np.inf, np.inf, np.nan, 0], [5, 0, np.nan, 1, 1, 0, -1, 2]], np.float32),
    "bool": np.array([[True, False, True, False, False, True, True, False], [False] * 8]),
}


@pytest.mark.parametrize("dtype", sorted(SELECTION_VALUES))
@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_top_k_sort_argsort_on_a_mesh_equal_numpy_for_every_dtype(dtype, axis_type):
    """Unsigned zeros, the int minimum and maximum, NaN (largest for top_k, as lax.top_k; last for sort, as
    NumPy) and bools rank on a mesh as they do off it: values never negated."""
    values = SELECTION_VALUES[dtype]
    order = np.argsort(values, axis=1, kind="stable")
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)):
        x = tx.shard(tx.named(jnp.asarray(values), ["batch", "seq"]), {"batch": "data", "seq": "model"})
        top, indices = tnp.top_k(x, 3, axis="seq", new_axis="k")
        ranked = np.asarray(tx.positional(indices, ["batch", "k"]))
        np.testing.assert_array_equal(np.asarray(tx.positional(tnp.argsort(x, "seq"), ["batch", "seq"])), order)
        np.testing.assert_array_equal(
            np.asarray(tx.positional(tnp.sort(x, "seq"), ["batch", "seq"])), np.sort(values, axis=1, kind="stable")
        )
    off = jax.lax.top_k(jnp.asarray(values), 3)
    np.testing.assert_array_equal(ranked, np.asarray(off[1]))
    np.testing.assert_array_equal(np.asarray(tx.positional(top, ["batch", "k"])), np.asarray(off[0]))
    if dtype != "float32":  # NaN ties aside, the top 3 are the last 3 of an ascending order
        picked = np.take_along_axis(values, ranked, axis=1)
        np.testing.assert_array_equal(picked, -np.sort(-values.astype(np.int64), axis=1)[:, :3])


def test_pools_of_ints_average_without_overflow_and_take_bools():
    """avg_pool sums in float32 at least, as jnp.mean: an average of int8 100s is 100.0, not -28; bools pool."""
    hundreds = tx.named(jnp.full((4, 2), 100, jnp.int8), ["height", "width"])
    averaged = tnp.avg_pool(hundreds, {"height": 2})
    assert averaged.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(tx.positional(averaged, ["height", "width"])), np.full((2, 2), 100.0))
    halves = tx.named(jnp.full((4,), 60000, jnp.float16), ["height"])  # a float16 sum of two overflows
    assert np.asarray(tnp.avg_pool(halves, {"height": 2}).data).tolist() == [60000.0, 60000.0]
    assert tnp.avg_pool(halves, {"height": 2}).dtype == jnp.float16
    mask = tx.named(jnp.asarray([True, False, False, False]), ["height"])
    assert np.asarray(tnp.max_pool(mask, {"height": 2}).data).tolist() == [True, False]
    assert np.asarray(tnp.avg_pool(mask, {"height": 2}).data).tolist() == [0.5, 0.0]
    assert np.asarray(tnp.max_pool(mask, {"height": 3}, strides=1, padding="SAME").data).tolist()[:2] == [True, True]


CONV_LAYOUTS = [
    ["batch", "group", "height", "channels"],
    ["height", "batch", "channels", "group"],
    ["group", "height", "batch", "channels"],
]
CONV_PLACEMENTS = [
    {"group": "model"},
    {"batch": "data", "group": "model"},
    {"batch": "model", "group": "data"},
    {"group": "data"},
    {"channels": "model", "batch": "data"},
    {"height": "model"},
    {"height": "model", "batch": "data"},
]


@pytest.mark.parametrize("layout", CONV_LAYOUTS, ids=lambda o: "-".join(o))
@pytest.mark.parametrize("placement", CONV_PLACEMENTS, ids=lambda p: "-".join(f"{a}:{m}" for a, m in p.items()))
@pytest.mark.parametrize("kernel_placement", [{}, {"out": "model"}, {"out": "model", "extra": "data"}], ids=str)
def test_conv_on_every_explicit_mesh_layout_equals_off_mesh(layout, placement, kernel_placement):
    """A second batch axis split (alone or with the first, in any order of the dims), the output features split:
    the same values as off the mesh (JAX refuses to merge a split dim minor to a whole one: split ones go first).
    A batch axis and an output feature on one mesh axis is the checker's conflict, raised (not resolved); the
    spatial axis and an output feature on one is none (the conv makes the spatial axis whole)."""
    values = normal(4, 4, 8, 4)
    weights = normal(3, 4, 4, 2)
    kernel_axes = ["kh", "channels", "out", "extra"]
    expected = tnp.conv(tx.named(values, CONV_LAYOUTS[0]), tx.named(weights, kernel_axes), {"height": "kh"}, "channels")
    order = ["batch", "group", "height", "out", "extra"]
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)):
        x = tx.named(np.transpose(values, [CONV_LAYOUTS[0].index(a) for a in layout]), layout)
        x = tx.shard(x, placement)
        kernel = tx.shard(tx.named(weights, kernel_axes), kernel_placement)
        if {m for a, m in placement.items() if a not in ("channels", "height")} & set(kernel_placement.values()):
            conv = lambda a, b: tnp.conv(a, b, {"height": "kh"}, "channels")
            for run in (conv, jax.jit(conv)):
                with pytest.raises(tx.AxisResourceConflict, match="are both assigned to mesh axis"):
                    run(x, kernel)
            return
        eager = tnp.conv(x, kernel, {"height": "kh"}, "channels")
        jitted = jax.jit(lambda a, b: tnp.conv(a, b, {"height": "kh"}, "channels"))(x, kernel)
    for got in (eager, jitted):
        np.testing.assert_allclose(
            np.asarray(tx.positional(got, order)), np.asarray(tx.positional(expected, order)), rtol=1e-5, atol=1e-5
        )


def test_conv_promotes_mixed_dtypes_as_einsum_does():
    x = tx.named(jnp.ones((5, 2), jnp.bfloat16), ["height", "channels"])
    kernel = tx.named(jnp.ones((3, 2, 4), jnp.float32), ["kh", "channels", "out"])
    out = tnp.conv(x, kernel, {"height": "kh"}, "channels")
    assert out.dtype == tnp.einsum("{channels},{channels}->{}", x, kernel).dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(tx.positional(out, ["height", "out"])), np.full((3, 4), 6.0))
    ints = tx.named(jnp.ones((5, 2), jnp.int8), ["height", "channels"])
    assert tnp.conv(ints, kernel, {"height": "kh"}, "channels").dtype == jnp.float32


@pytest.mark.parametrize(
    "kernel_axes, shape, spatial, contract",
    [
        (["kh", "channels", "out"], (0, 2, 4), {"height": "kh"}, "channels"),
        (["kh", "channels", "out"], (3, 2, 4), {"height": "kh", "width": "kh"}, "channels"),
        (["kh", "channels", "out"], (2, 2, 4), {"height": "kh"}, ("channels", "kh")),
    ],
    ids=["zero-size window", "two spatial axes on one kernel axis", "window contracted"],
)
def test_conv_window_axes_are_named_errors(kernel_axes, shape, spatial, contract):
    x = tx.named(jnp.ones((5, 5, 2)), ["height", "width", "channels"])
    with pytest.raises(tx.NamedShapeError, match=r"tnp\.conv: kernel axis 'kh'.*Fix:"):
        tnp.conv(x, tx.named(jnp.ones(shape), kernel_axes), spatial, contract)


def test_a_pool_whose_pooled_split_axis_the_mesh_does_not_divide_names_the_axis_and_the_fix_works():
    """On an Explicit mesh a pooled axis stays split; a pooled size its parts do not divide is typed_xmap's error
    (JAX's own is a bare ``ShardingTypeError``); the fix it gives (make the axis whole first) runs."""
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        x = tx.shard(tx.named(jnp.ones((2, 8, 3)), ["batch", "width", "chan"]), {"width": "model"})
        with pytest.raises(tx.NamedShapeError, match="axis 'width' \\(size 8\\) is split over mesh axis 'model' in 4"):
            tnp.avg_pool(x, {"width": 2}, strides={"width": 1})
        fixed = tnp.avg_pool(tx.constrain(x, {}), {"width": 2}, strides={"width": 1})
        evenly = tnp.max_pool(x, {"width": 2})
    assert fixed.named_shape["width"] == 7
    assert tx.resources_of(evenly) == {"width": "model"} and evenly.named_shape["width"] == 4
