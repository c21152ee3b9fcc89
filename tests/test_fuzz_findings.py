"""Every finding of the third fuzz round (issue 19) as a named error with a ``Fix:`` or a correct result.

Each test makes the input the fuzz round found the way a user would write it. The messages themselves are
pinned in full in tests/test_messages.py; here the tests say what must happen: which error (by class and
kind), or which values (compared with NumPy).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, NamedShapeError, NamedShapeSyntaxError, f32
from typed_xmap._algebra import MAX_MESSAGE, ErrorKind

cloudpickle = pytest.importorskip("cloudpickle")


def explicit_mesh():
    return jax.make_mesh((4, 2), ("data", "model"))


def auto_mesh():
    return jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto))


def layers(n=3):
    return tx.named(jnp.arange(n * 4.0).reshape(n, 4), ["layers", "embed"])


@contextlib.contextmanager
def raises(kind, match):
    """``pytest.raises`` for a NamedShapeError of ``kind`` whose message matches and says how to fix it."""
    with pytest.raises(NamedShapeError, match=match) as info:
        yield info
    assert info.value.kind is kind
    assert "fix:" in str(info.value).lower()


# -- tx.vmap ------------------------------------------------------------------------------------------


def test_vmap_refuses_an_axis_listed_twice():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "feat"])
    with raises(ErrorKind.INVALID_ARGUMENT, "axis 'batch' is listed twice"):
        tx.vmap(tnp.exp, axis=("batch", "batch"))(x)


def test_vmap_over_two_distinct_axes_still_maps_both():
    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "feat"])
    out = tx.vmap(lambda v: v * 2, axis=("batch", "feat"))(x)
    np.testing.assert_array_equal(tx.positional(out, ["batch", "feat"]), 2 * np.arange(6.0).reshape(2, 3))


# -- tx.scan ------------------------------------------------------------------------------------------


def test_scan_length_must_agree_with_the_scanned_axis():
    with raises(ErrorKind.AXIS_SIZE, "length=7, but the scanned axis 'layers' has size 3"):
        tx.scan(lambda c, p: (c + 1, None), 0.0, layers(), axis="layers", length=7)


def test_scan_length_equal_to_the_axis_size_is_fine():
    carry, _ = tx.scan(lambda c, p: (c + 1, None), 0.0, layers(), axis="layers", length=3)
    assert float(carry) == 3.0


def test_scan_length_alone_runs_that_many_steps_and_a_bad_one_is_named():
    carry, _ = tx.scan(lambda c, p: (c + 1, None), 0.0, {}, axis="layers", length=5)
    assert float(carry) == 5.0
    with raises(ErrorKind.INVALID_ARGUMENT, "xs has no leaves"):
        tx.scan(lambda c, p: (c + 1, None), 0.0, {}, axis="layers")
    with raises(ErrorKind.INVALID_ARGUMENT, "length=2.5"):
        tx.scan(lambda c, p: (c + 1, None), 0.0, {}, axis="layers", length=2.5)


def test_scan_body_returning_one_value_is_told_to_return_a_pair():
    with raises(ErrorKind.INVALID_ARGUMENT, r"not a pair \(carry, ys\)") as info:
        tx.scan(lambda c, p: c, 0.0, layers(), axis="layers")
    assert "tx.positional" not in str(info.value)


def test_scan_carry_changing_dtype_is_named():
    init = tnp.zeros({"embed": 4})
    with raises(ErrorKind.DTYPE, "goes in as float32 but comes out as int32"):
        tx.scan(lambda c, p: (c.astype(jnp.int32), None), init, layers(), axis="layers")
    with raises(ErrorKind.DTYPE, r"the carry\['h'\] goes in as float32"):
        tx.scan(lambda c, p: ({"h": jnp.int32(1)}, None), {"h": jnp.float32(0)}, layers(), axis="layers")


def test_scan_inside_vmap_with_a_carry_from_tnp_zeros():
    xs = np.arange(5 * 3 * 4.0).reshape(5, 3, 4)
    batch = tx.named(jnp.asarray(xs), ["batch", "layers", "embed"])

    def per_example(b):
        carry, ys = tx.scan(lambda c, p: (c + p, tnp.sum(p, "embed")), tnp.zeros({"embed": 4}), b, axis="layers")
        return carry, ys

    carry, ys = tx.vmap(per_example, axis="batch")(batch)
    np.testing.assert_allclose(tx.positional(carry, ["batch", "embed"]), xs.sum(axis=1))
    np.testing.assert_allclose(tx.positional(ys, ["batch", "layers"]), xs.sum(axis=2))


def test_scan_carry_whose_placement_changes_on_an_explicit_mesh_names_the_axis():
    with jax.set_mesh(explicit_mesh()):
        xs = tx.shard(tx.named(jnp.ones((3, 8, 8)), ["layers", "batch", "feat"]), {"batch": "data"})
        init = tnp.zeros({"batch": 8, "feat": 8})
        with raises(ErrorKind.INVALID_ARGUMENT, "axis 'batch' of the carry goes in unsplit but comes out split"):
            tx.scan(lambda c, p: (c + p, None), init, xs, axis="layers")
        placed = tx.shard(init, {"batch": "data"})  # the fix the message gives
        carry, _ = tx.scan(lambda c, p: (c + p, None), placed, xs, axis="layers")
    np.testing.assert_array_equal(tx.positional(carry, ["batch", "feat"]), np.full((8, 8), 3.0))


def test_positional_scan_carry_whose_placement_changes_on_an_explicit_mesh_names_the_dim():
    """A plain-array carry gets the NamedArray carry's named error (not lax.scan's type mismatch), path included."""
    with jax.set_mesh(explicit_mesh()):
        xs = tx.shard(tx.named(jnp.ones((3, 8, 8)), ["layers", "batch", "feat"]), {"batch": "data"})

        def step(c, p):
            return {"h": (c["h"][0] + tx.positional(p, ["batch", "feat"]),)}, None

        init = {"h": (jnp.zeros((8, 8)),)}
        message = r"dim 0 of the positional carry\['h'\]\[0\] goes in unsplit but comes out split over 'data'"
        with raises(ErrorKind.INVALID_ARGUMENT, message):
            tx.scan(step, init, xs, axis="layers")
        placed = {"h": (jax.sharding.reshard(init["h"][0], jax.P("data", None)),)}  # the fix the message gives
        carry, _ = tx.scan(step, placed, xs, axis="layers")
    assert carry["h"][0].sharding.spec == jax.P("data", None)
    np.testing.assert_array_equal(carry["h"][0], np.full((8, 8), 3.0))


# -- indexing -----------------------------------------------------------------------------------------


def test_a_static_int_out_of_bounds_on_a_positional_dim_raises():
    values = np.arange(6.0).reshape(3, 2)
    x = tx.named(jnp.asarray(values), {0: "batch"})  # positional dim of size 2
    with raises(ErrorKind.AXIS_SIZE, "index 5 is out of bounds for positional dim 0 of size 2"):
        x[5]
    with raises(ErrorKind.AXIS_SIZE, "index -3 is out of bounds"):
        x[-3]
    np.testing.assert_array_equal(tx.positional(x[-1], ["batch"]), values[:, -1])
    np.testing.assert_array_equal(tx.positional(x[None, 1], ["batch", ...]), values[:, 1][:, None])


# -- constructors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [-1, 2.0, True])
def test_causal_mask_size_is_a_non_negative_int(size):
    with raises(ErrorKind.INVALID_ARGUMENT, f"size={size!r}; a size is a non-negative int"):
        tnp.causal_mask("q", "k", size)


@pytest.mark.parametrize("size", [True, -1, 3.0])
def test_one_hot_size_is_a_non_negative_int(size):
    tokens = tx.named(jnp.array([0, 1, 2]), ["seq"])
    with raises(ErrorKind.INVALID_ARGUMENT, f"size={size!r}; a size is a non-negative int"):
        tnp.one_hot(tokens, "vocab", size)


def test_one_hot_of_float_tokens_is_named():
    with raises(ErrorKind.DTYPE, "tokens have dtype float32"):
        tnp.one_hot(tx.named(jnp.array([0.0, 1.0]), ["seq"]), "vocab", 4)


def test_one_hot_by_keyword_still_works():
    tokens = tx.named(jnp.array([0, 2]), ["seq"])
    out = tnp.one_hot(tokens, axis="vocab", size=3)
    np.testing.assert_array_equal(tx.positional(out, ["seq", "vocab"]), np.eye(3)[[0, 2]])


def test_broadcast_to_a_negative_size_is_named():
    x = tx.named(jnp.ones((2, 3)), ["batch", "feat"])
    with raises(ErrorKind.INVALID_ARGUMENT, "the size of axis 'k' is -1"):
        tx.broadcast_to(x, {"batch": 2, "feat": 3, "k": -1})


def test_arange_step_zero_is_named():
    with raises(ErrorKind.INVALID_ARGUMENT, "step is 0"):
        tnp.arange("i", 0, 5, 0)


# -- sharding across mesh kinds -----------------------------------------------------------------------


def test_constrain_outside_jit_on_an_auto_mesh_places_like_shard():
    x = tx.named(jnp.arange(32.0).reshape(8, 4), ["batch", "feat"])
    with jax.set_mesh(auto_mesh()):
        placed = tx.constrain(x, {"batch": "data"})
    assert tx.resources_of(placed) == {"batch": "data"}
    np.testing.assert_array_equal(tx.positional(placed, ["batch", "feat"]), np.arange(32.0).reshape(8, 4))


def test_explicit_and_auto_meshes_meeting_in_one_operation_is_named():
    x = tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    with jax.set_mesh(explicit_mesh()):
        a = tx.shard(x, {"batch": "data"})
    with jax.set_mesh(auto_mesh()):
        b = tx.shard(x, {"batch": "data"})
    with raises(ErrorKind.INVALID_ARGUMENT, "live on different meshes"):
        a + b
    with jax.set_mesh(auto_mesh()), raises(ErrorKind.INVALID_ARGUMENT, "live on different meshes"):
        a + b


def test_resources_of_inside_jit_reads_an_explicit_placement():
    x = tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    seen = []
    with jax.set_mesh(explicit_mesh()):
        a = tx.shard(x, {"batch": "data", "feat": "model"})
        jax.jit(lambda v: seen.append(tx.resources_of(v)) or v)(a)
    assert seen == [{"batch": "data", "feat": "model"}]


def test_resources_of_inside_jit_on_an_auto_mesh_says_it_cannot_know():
    x = tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    with jax.set_mesh(auto_mesh()):
        a = tx.shard(x, {"batch": "data"})
        with raises(ErrorKind.INVALID_ARGUMENT, "Auto mesh axes"):
            jax.jit(lambda v: tx.resources_of(v) and v)(a)


def test_resources_of_inside_jit_with_no_mesh():
    """No mesh, current or the value's: one device, nothing split, so {} (as outside jit). A value placed on an
    Auto mesh and passed to a jit called outside that mesh's block is still split, but its traced type does not
    say how: the Auto error, not a silent {}. An Explicit placement travels in the type and is read."""
    x = tx.named(jnp.ones((8, 4)), ["batch", "feat"])
    seen = []
    jax.jit(lambda v: seen.append(tx.resources_of(v)) or v)(x)
    assert seen == [{}] and tx.resources_of(x) == {}
    with jax.set_mesh(auto_mesh()):
        on_auto = tx.shard(x, {"batch": "data"})
    with jax.set_mesh(explicit_mesh()):
        on_explicit = tx.shard(x, {"batch": "data"})
    with raises(ErrorKind.INVALID_ARGUMENT, r"a value on Auto mesh axes \(data, model\) is placed by the compiler"):
        jax.jit(lambda v: tx.resources_of(v) and v)(on_auto)
    assert tx.resources_of(jax.jit(lambda v: v * 2)(on_auto)) == {"batch": "data"}  # outside jit: read
    jax.jit(lambda v: seen.append(tx.resources_of(v)) or v)(on_explicit)
    assert seen[-1] == {"batch": "data"}


# -- specs and messages -------------------------------------------------------------------------------


def test_a_spec_size_of_5000_digits_is_a_syntax_error():
    with pytest.raises(NamedShapeSyntaxError, match="has 5000 digits"):
        NamedArray[f32, "a=" + "9" * 5000]
    with pytest.raises(NamedShapeSyntaxError, match="has 30 digits"):
        NamedArray[f32, "a", "n " + "9" * 30]


def test_a_mismatch_against_a_14000_axis_annotation_has_a_capped_message():
    many = " ".join(f"a{i}" for i in range(14_000))

    @tx.typed
    def f(v: NamedArray[f32, many]) -> NamedArray[f32, many]:
        return v

    with pytest.raises(NamedShapeError) as info:
        f(tx.named(jnp.ones((2, 3)), ["batch", "feat"]))
    message = str(info.value)
    assert len(message) <= MAX_MESSAGE + 60
    assert "characters left out" in message and "Fix:" in message


# -- random keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", [3, "k", jnp.ones(3), jnp.zeros(3, jnp.uint32)], ids=["int", "str", "floats", "uint32[3]"]
)
@pytest.mark.parametrize("draw", ["normal", "uniform", "bernoulli"])
def test_random_with_a_bad_key_names_the_argument(key, draw):
    fn = getattr(tx.random, draw)
    args = (key, 0.5, {"a": 2}) if draw == "bernoulli" else (key, {"a": 2})
    with raises(ErrorKind.INVALID_ARGUMENT, f"tx.random.{draw}: key is .*, not a PRNG key"):
        fn(*args)


def test_random_accepts_new_style_and_raw_keys_alike():
    new = tx.random.normal(jax.random.key(0), {"a": 3})
    raw = tx.random.normal(jax.random.PRNGKey(0), {"a": 3})
    np.testing.assert_array_equal(tx.positional(new, ["a"]), tx.positional(raw, ["a"]))


# -- pickling -------------------------------------------------------------------------------------------


def test_cloudpickle_of_an_annotation_gives_the_same_class():
    hint = NamedArray[f32, "batch feat"]
    assert pickle.loads(cloudpickle.dumps(hint)) is hint


def test_cloudpickle_of_a_locally_defined_typed_function():
    @tx.typed
    def total(v: NamedArray[f32, "batch feat"]) -> NamedArray[f32, "batch"]:
        return tnp.sum(v, "feat")

    x = tx.named(jnp.arange(6.0).reshape(2, 3), ["batch", "feat"])
    total(x)  # its layout cache holds this call's layout now
    loaded = pickle.loads(cloudpickle.dumps(total))
    np.testing.assert_array_equal(tx.positional(loaded(x), ["batch"]), [3.0, 12.0])
    with pytest.raises(NamedShapeError, match="feat"):
        loaded(tx.named(jnp.ones((2, 3)), ["batch", "fet"]))


def double(v):
    return v * 2


def test_xmapped_functions_pickle():
    for dumps, fun in ((pickle.dumps, double), (cloudpickle.dumps, lambda v: v * 2)):
        f = tx.xmap(fun, in_axes=["a", ...], out_axes=["a", ...])
        loaded = pickle.loads(dumps(f))
        np.testing.assert_array_equal(loaded(np.ones((4, 2))), np.full((4, 2), 2.0))


# -- orbax checkpoints ----------------------------------------------------------------------------------


def _orbax():
    return pytest.importorskip("orbax.checkpoint")


def _saved(ocp, directory, tree):
    path = f"{directory}/ckpt"
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(path, tree)
        checkpointer.wait_until_finished()
    return path


def _restore(ocp, path, target=None):
    with ocp.StandardCheckpointer() as checkpointer:
        if target is None:
            return checkpointer.restore(path)
        return checkpointer.restore(path, jax.tree.map(ocp.utils.to_shape_dtype_struct, target))


def test_orbax_restore_into_a_target_with_a_renamed_axis_fails_naming_the_axes():
    ocp = _orbax()
    values = np.arange(4.0).reshape(2, 2)  # square: positional data alone would fit the renamed target
    with tempfile.TemporaryDirectory() as directory:
        path = _saved(ocp, directory, {"w": tx.named(jnp.asarray(values), ["a", "b"])})
        with pytest.raises(ValueError, match=r"data\[b,c\]") as info:
            _restore(ocp, path, {"w": tx.named(jnp.zeros((2, 2)), ["b", "c"])})
        assert "data[a,b]" in str(info.value) or "data[b,c]" in str(info.value)


def test_orbax_restore_realigns_by_name():
    ocp = _orbax()
    values = np.arange(6.0).reshape(2, 3)
    with tempfile.TemporaryDirectory() as directory:
        path = _saved(ocp, directory, {"w": tx.named(jnp.asarray(values), ["a", "b"])})
        restored = _restore(ocp, path, {"w": tx.named(jnp.zeros((3, 2)), ["b", "a"])})["w"]
    assert restored.named_shape == {"a": 2, "b": 3}
    np.testing.assert_array_equal(tx.positional(restored, ["a", "b"]), values)


def test_orbax_restore_without_a_target_keeps_the_names():
    ocp = _orbax()
    values = np.arange(6.0).reshape(2, 3)
    with tempfile.TemporaryDirectory() as directory:
        path = _saved(ocp, directory, {"w": tx.named(jnp.asarray(values).T, ["b", "a"])})
        restored = _restore(ocp, path)
    (key,) = restored["w"]
    assert key == "data[a,b]"  # the names, in the order of the stored dims
    np.testing.assert_array_equal(np.asarray(restored["w"][key]), values)


# -- issue 28: the fourth round ------------------------------------------------------------------------------


def logits(seq=4, experts=3):
    return tx.named(jnp.asarray(np.random.default_rng(0).normal(size=(seq, experts)), jnp.float32), ["seq", "expert"])


@pytest.mark.parametrize(
    "arguments, argument",
    [
        ({"k": 1, "capacity": 2, "tokens": ()}, "tokens=()"),
        ({"k": 1, "capacity": 0}, "capacity=0"),
        ({"k": 1, "capacity": 10**12}, "capacity=1000000000000"),
        ({"k": 1, "capacity": -1}, "capacity=-1"),
        ({"k": 1, "capacity": 2.0}, "capacity=2.0"),
        ({"k": 0, "capacity": 2}, "k=0"),
        ({"k": 4, "capacity": 2}, "k=4"),
        ({"k": True, "capacity": 2}, "k=True"),
        ({"k": 1, "capacity": 2, "tokens": ("seq", "seq")}, "names an axis twice"),
        ({"k": 1, "capacity": 2, "tokens": "expert"}, "names an axis twice"),
        ({"k": 1, "capacity": 2, "slot": "seq"}, "logits already has an axis 'seq'"),
        ({"k": 1, "capacity": 2, "expert": 3}, "expert=3"),
        ({"k": 1, "capacity": 2, "tokens": "batch"}, "names axis 'batch'"),
    ],
)
def test_moe_route_names_itself_and_the_argument(arguments, argument):
    with pytest.raises(NamedShapeError) as info:
        tx.moe_route(logits(), **arguments)
    assert str(info.value).startswith("tx.moe_route") and argument in str(info.value) and "Fix:" in str(info.value)


def test_moe_route_capacity_up_to_the_tokens_and_a_choice_axis_of_its_own():
    full, _, _ = tx.moe_route(logits(), 1, 4)  # every token fits one expert: capacity = tokens is allowed
    assert full.named_shape == {"seq": 4, "expert": 3, "slot": 4}
    clashing = tx.rename(logits(), {"seq": "expert_choice"})  # the internal choice axis takes another name
    dispatch, _, _ = tx.moe_route(clashing, 2, 4, tokens="expert_choice")
    assert float(dispatch.sum(tuple(dispatch.named_shape)).data) == 8.0  # 4 tokens x 2 experts, none dropped


def test_moe_dispatch_of_a_value_with_its_own_expert_axis_is_named():
    dispatch, _, _ = tx.moe_route(logits(), 1, 2)
    with pytest.raises(NamedShapeError, match=r"tx\.moe_dispatch: x has an axis 'expert'.*diagonal.*Fix:"):
        tx.moe_dispatch(tx.named(jnp.ones((4, 3)), ["seq", "expert"]), dispatch)
    routed = tx.moe_dispatch(
        tx.named(jnp.ones((4, 3)), ["seq", "expert"]), tx.rename(dispatch, {"expert": "e"}), expert="e"
    )
    assert routed.named_shape == {"expert": 3, "e": 3, "slot": 2}


ABSURD = {"a": 10**12, "b": 10**12}


@pytest.mark.parametrize(
    "make",
    [
        lambda: tnp.zeros(ABSURD),
        lambda: tnp.full({"a": 10**13}, 2),
        lambda: tnp.ones({"a": 2**62, "b": 4}),
        lambda: tnp.zeros_like(tnp.zeros({"a": 2}), new_axes={"b": 10**13}),
        lambda: tnp.arange("a", 10**13),
        lambda: tnp.one_hot(tx.named(jnp.zeros(3, jnp.int32), ["seq"]), "vocab", 10**13),
        lambda: tnp.causal_mask("q", "k", 10**7),
        lambda: tx.random.randint(jax.random.key(0), {"a": 10**13}, 0, 5),
        lambda: tx.random.normal(jax.random.key(0), ABSURD),
        lambda: tnp.pad(tnp.zeros({"a": 2}), {"a": (10**12, 0)}),
        lambda: tx.broadcast_to(tnp.zeros({"a": 2}), {"a": 2, "b": 10**13}),
        lambda: tnp.max_pool(tnp.zeros({"a": 2, "b": 10**6}), {"a": 1}, padding={"a": (10**12, 0)}),
        lambda: tnp.conv(
            tnp.zeros({"h": 2, "b": 10**6}), tnp.zeros({"kh": 1, "o": 2}), {"h": "kh"}, padding={"h": (10**12, 0)}
        ),
    ],
    ids=[
        "zeros",
        "full",
        "int64 overflow",
        "zeros_like",
        "arange",
        "one_hot",
        "causal_mask",
        "randint",
        "normal",
        "pad",
        "broadcast_to",
        "max_pool padding",
        "conv padding",
    ],
)
def test_absurd_sizes_are_named_before_jax_is_asked(make):
    """XLA aborts the process (SIGABRT) on these; the bound is the devices' memory, checked first."""
    with pytest.raises(NamedShapeError, match=r"more than the 8 cpu devices \(the host's memory\) hold.*Fix:") as info:
        make()
    assert info.value.kind is ErrorKind.AXIS_SIZE


def test_the_allocation_bound_is_the_host_memory_on_cpu():
    import os

    from typed_xmap._ops._memory import device_memory

    limit, where = device_memory()
    assert limit == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert where == "the 8 cpu devices (the host's memory)"
    assert tnp.zeros({"a": 1000, "b": 1000}).named_shape == {"a": 1000, "b": 1000}  # large but real: made


@pytest.mark.parametrize(
    "make",
    [
        lambda: tnp.zeros({"a": 2**62, "b": 0}),  # XLA: "overflow in static extent product", SIGABRT
        # one int32 more than the host holds (found as 6319125505): XLA allocated for it, bad_alloc or swapping
        lambda: tnp.full(
            {"a": os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4 + 1, "b": 0}, 2, jnp.int32
        ),
        lambda: tx.random.randint(jax.random.key(0), {"a": 0, "b": 10**12}, 0, 5),
        lambda: tnp.one_hot(tx.named(jnp.zeros(0, jnp.int32), ["seq"]), "v", 10**12),
    ],
)
def test_an_empty_value_of_absurd_sizes_is_named_before_jax_is_asked(make):
    """An empty value holds nothing, but XLA builds it from its other sizes (the fuzz's sizes family found the
    abort and a two-minute hang): those sizes are held to the same bound."""
    with pytest.raises(NamedShapeError, match=r"is empty, but its other sizes make .* more than .*Fix:") as info:
        make()
    assert info.value.kind is ErrorKind.AXIS_SIZE
    assert tnp.zeros({"a": 10**6, "b": 0}).named_shape == {"a": 10**6, "b": 0}  # empty and describable: made


@pytest.mark.parametrize(
    "draw, kind",
    [
        (
            lambda: tx.random.categorical(jax.random.key(0), tx.named(jnp.ones((0, 3)), ["vocab", "b"]), "vocab"),
            ErrorKind.AXIS_SIZE,
        ),
        (
            lambda: tx.random.categorical(
                jax.random.key(0), tx.named(jnp.ones((2, 3), jnp.int32), ["vocab", "b"]), "vocab"
            ),
            ErrorKind.DTYPE,
        ),
        (
            lambda: tx.random.categorical(jax.random.key(0), tx.named(jnp.ones((2, 3), bool), ["vocab", "b"]), "vocab"),
            ErrorKind.DTYPE,
        ),
        (lambda: tx.random.randint(jax.random.key(0), {"a": 3}, 0, 5, jnp.float32), ErrorKind.DTYPE),
    ],
    ids=["empty axis", "int logits", "bool logits", "float randint"],
)
def test_random_draws_name_their_argument(draw, kind):
    with pytest.raises(NamedShapeError, match=r"^tx\.random\.(categorical|randint): .*Fix:") as info:
        draw()
    assert info.value.kind is kind


@pytest.mark.parametrize(
    "shape, names, fault",
    [
        ((2, 2), ("x", "x"), "'x' twice"),
        ((2, 2), ("x", 3), "3, not a non-empty string"),
        ((2, 2), ("x", ""), "'', not a non-empty string"),
        ((2,), "x", "as many sizes as names"),
        ((2, True), ("x", "y"), "as many sizes as names"),
        ((2, 0), ("x", "y"), "as many sizes as names"),
    ],
)
def test_fitting_mesh_checks_names_and_sizes(shape, names, fault):
    with pytest.raises(NamedShapeError, match=r"tx\.fitting_mesh.*Fix:") as info:
        tx.fitting_mesh(shape, names)
    assert fault in str(info.value)


def test_fitting_mesh_takes_numpy_ints_and_many_axes():
    assert dict(tx.fitting_mesh((np.int64(4), np.int32(2)), ("x", "y")).shape) == {"x": 4, "y": 2}
    from typed_xmap._ops._devices import fitting_shape

    assert fitting_shape((4,) * 16, 8) == (4, 2) + (1,) * 14  # 4**16 combinations, never listed
    assert fitting_shape((6, 4), 8) == (2, 4)
    assert fitting_shape((1024,) * 16, 4096) == (1024, 4) + (1,) * 14
    mesh = tx.fitting_mesh((4,) * 16, tuple(f"m{i}" for i in range(16)))
    assert mesh.devices.size == 8


def test_named_shape_dtype_structs_are_restore_targets():
    """docs/guide/orbax.md: a target leaf is a NamedArray of jax.ShapeDtypeStruct(shape, dtype, sharding=...)."""
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = explicit_mesh()
    struct = jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec("data")))
    target = tx.named(struct, ["hidden", "embed"])  # moved to the canonical layout: embed, hidden
    assert target.named_shape == {"hidden": 8, "embed": 4} and target.data.shape == (4, 8)
    assert tx.resources_of(target) == {"hidden": "data"}
    ocp = _orbax()
    values = np.arange(32.0).reshape(8, 4)
    with tempfile.TemporaryDirectory() as directory:
        path = _saved(ocp, directory, {"w": tx.named(jnp.asarray(values), ["hidden", "embed"])})
        with ocp.StandardCheckpointer() as checkpointer:
            restored = checkpointer.restore(path, {"w": target})["w"]
    np.testing.assert_array_equal(tx.positional(restored, ["hidden", "embed"]), values)
    assert tx.resources_of(restored) == {"hidden": "data"}


def test_annotation_classes_are_kept_in_a_bounded_cache():
    """NamedArray[f32, f"b={n} e"] per call with a new n: at most HINT_CACHE_SIZE classes are kept."""
    from typed_xmap._checking import _annotations

    for n in range(_annotations.HINT_CACHE_SIZE + 500):
        NamedArray[f32, f"b={n} e"]
    assert _annotations._hint_class.cache_info().currsize <= _annotations.HINT_CACHE_SIZE
    assert len(_annotations._hints_by_meaning) <= _annotations.HINT_CACHE_SIZE
    recent = NamedArray[f32, f"b={_annotations.HINT_CACHE_SIZE + 499} e"]
    assert recent is NamedArray[f32, f"e b={_annotations.HINT_CACHE_SIZE + 499}"]  # one class per meaning still
