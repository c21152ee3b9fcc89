"""The message catalogue: every message typed_xmap raises, produced by a test and compared in full.

jaxtyping's ``test/test_messages.py`` is the model. A case makes the error the way a user would meet it,
and checks its class, its ``ErrorKind`` and its whole text, so a change of wording is a visible diff
here (and in docs/errors.md, the catalogue for readers). ``test_every_site_has_a_case`` holds the files
listed in ``CATALOGUED`` to it: each raise site there (``tests/message_sites.py`` finds them) has a
message below. To catalogue another module, add its cases and its path.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple, TypedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import AxisResourceConflict, NamedArray, UnboundAxisError, f32, xmap
from typed_xmap._algebra import (
    ErrorKind,
    NamedShapeError,
    NamedShapeSyntaxError,
    broadcast_placement,
    broadcast_positional,
    declared_placement_error,
    einsum_result,
    meet_fields,
    meet_sizes,
    parse_einsum,
    parse_named_axes,
    parse_positional,
    parse_shape_spec,
    positional_einsum,
    reduce_named_shape,
    size_floordiv,
    symbol,
    union_named_shapes,
    unlisted_return_error,
)

sys.path.insert(0, str(Path(__file__).parent))
try:
    import message_sites
finally:
    sys.path.pop(0)

E, S, C, U = NamedShapeError, NamedShapeSyntaxError, AxisResourceConflict, UnboundAxisError
K = ErrorKind


def on_mesh(fn):
    def run():
        with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
            return fn()

    return run


def x():
    return tx.named(jnp.ones((8, 4)), ["batch", "feat"])


def placed_contraction(contract):
    """A contraction on an Explicit mesh whose result puts ``seq`` and ``mlp`` on one mesh axis (the runtime
    raises the checker's conflict rather than leave one whole)."""
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        h = tx.shard(tx.named(jnp.ones((4, 8, 6)), ["batch", "seq", "embed"]), {"seq": "y"})
        w = tx.shard(tx.named(jnp.ones((6, 10)), ["embed", "mlp"]), {"mlp": "y"})
        return contract(h, w)


def typed_call():
    @tx.typed
    def f(a: NamedArray[f32, "batch feat"], b: NamedArray[f32, "feat"]) -> NamedArray[f32, "batch"]:
        return tnp.sum(a * b, "feat")

    return f(x(), tx.named(jnp.ones(5), ["feat"]))


def typed_group_return():
    @tx.typed
    def pool(x: NamedArray[f32, "*rest embed"]) -> NamedArray[f32, "*rest embed"]:
        return tnp.sum(x, "batch")

    return pool(tx.named(jnp.ones((2, 3, 4)), ["batch", "seq", "embed"]))


def typed_container():
    @tx.typed
    def f(ws: dict[str, NamedArray[f32, "embed"]]) -> None:
        pass

    return f({"a": tx.named(jnp.ones(4), ["embed"]), "b": tx.named(jnp.ones(4), ["emb"])})


class Params(TypedDict):
    w: NamedArray[f32, "in out"]
    b: NamedArray[f32, "out"]


class Carry(NamedTuple):
    h: NamedArray[f32, "batch hidden"]
    steps: NamedArray[f32, "batch"]


def typed_inside_vmap():
    @tx.typed
    def per_example(x: NamedArray[f32, "embed"]) -> NamedArray[f32, "embed"]:
        return x

    tx.vmap(per_example, axis="batch")(tx.named(jnp.ones((4, 3, 2)), ["batch", "embed", "other"]))


def typed_xmap_body_naming_one_mapped_axis():
    def only_i(v: NamedArray[f32, "i"]):
        return v

    tx.xmap(tx.typed(only_i), in_axes=["i", "j"], out_axes=["i", "j"])(jnp.ones((8, 4)))


def typed_dict_field():
    @tx.typed
    def dense(params: Params) -> None:
        pass

    return dense({"w": tx.named(jnp.ones((3, 4)), ["in", "out"]), "b": tx.named(jnp.ones(5), ["out"])})


def typed_dict_key():
    @tx.typed
    def dense(params: Params) -> None:
        pass

    return dense({"w": tx.named(jnp.ones((3, 4)), ["in", "out"])})  # type: ignore[typeddict-item]


def typed_placement():
    @tx.typed
    def f(a: NamedArray[f32, "batch@x feat"]) -> NamedArray[f32, "batch"]:
        return tnp.sum(a, "feat")

    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        return f(tx.shard(x(), {"batch": "y"}))


def typed_placement_whole():
    @tx.typed
    def f(a: NamedArray[f32, "batch feat@y"]) -> NamedArray[f32, "batch"]:
        return tnp.sum(a, "feat")

    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        return f(tx.shard(x(), {}))


def named_tuple_scan_carry():
    @tx.typed
    def step(carry: Carry, x: NamedArray[f32, "batch hidden"]) -> tuple[Carry, None]:
        return Carry(carry.h + x, carry.steps), None

    init = Carry(tx.named(jnp.ones((2, 5)), ["batch", "hidden"]), tx.named(jnp.ones(2), ["btch"]))
    return lax.scan(lambda c, x: step(c, tx.named(x, ["batch", "hidden"])), init, jnp.ones((3, 2, 5)))


def layers():
    return {"w": tx.named(jnp.ones((3, 4)), ["layers", "embed"])}


def scan_carry(step):
    return tx.scan(
        lambda c, p: (step(c, p), None), tx.named(jnp.ones((2, 4)), ["batch", "embed"]), layers(), axis="layers"
    )


def many_axes():
    spec = parse_einsum("{" + ", ".join(f"a{i}" for i in range(53)) + "}->{}")
    names = [f"a{i}" for i in range(53)]
    result = einsum_result(spec, [dict.fromkeys(names, 1)], [()])
    return positional_einsum(spec, [names], result)


def image():
    return tx.named(jnp.ones((2, 6, 5, 3)), ["batch", "height", "width", "channels"])


def kernel(channels=3, out="out"):
    return tx.named(jnp.ones((3, 3, channels, 4)), ["kh", "kw", "channels", out])


def router():
    return tx.named(jnp.ones((2, 4, 3)), ["batch", "seq", "expert"])


def on_16_gib(fn):
    """``fn`` with the devices' memory fixed at 16 GiB (the message names the limit, which is the host's)."""

    def run():
        from typed_xmap._ops import _memory

        saved = _memory.device_memory
        _memory.device_memory = lambda: (16 * 2**30, "the 8 cpu devices (the host's memory)")
        try:
            return fn()
        finally:
            _memory.device_memory = saved

    return run


def strided_pool(v):
    return tnp.max_pool(v, {"height": 2, "width": 1}).sum()


def identity(v):
    return v


SEGMENT_IDS = jnp.array([0, 1, 0, 1, 2, 2])


def edges():
    return tx.named(jnp.ones((6, 4)), ["edge", "feature"])


V = np.ones(8, np.float32)


def xm(in_axes=["a", ...], out_axes=["a", ...], fun=identity, **options):  # noqa: B006 - never mutated
    return xmap(fun, in_axes=in_axes, out_axes=out_axes, **options)


def inner_xmap_on_another_mesh():
    inner = xm(["b", ...], ["b", ...])

    def body(v):
        with jax.sharding.use_abstract_mesh(jax.make_mesh((2, 4), ("x", "y")).abstract_mesh):
            return inner(v)

    return xm(fun=body)(np.ones((4, 2)))


def inner_xmap_reusing_an_axis():
    inner = xm()
    return xm(fun=lambda v: inner(v))(np.ones((4, 2)))


def permute_over_two_axes():
    def body(v):
        return lax.ppermute(v, ("i", "j"), [(k, (k + 1) % 8) for k in range(8)])

    return xm(["i", "j", ...], ["i", "j", ...], body)(np.ones((2, 4), np.float32))


def committed_to_other_devices():
    with jax.set_mesh(jax.make_mesh((1,), ("a",))):
        v = jnp.ones((8,))
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        return xm(["i"], ["i"], axis_resources={"i": "x"})(v)


def two_axes_on_a_named_loop():
    with tx.serial_loop("l", 2):
        return xm(["a", "b", ...], ["a", "b", ...], axis_resources={"a": "l", "b": "l"})(np.ones((4, 4)))


def collective_over_a_loop_axis():
    return xm(["a", ...], [...], lambda q: lax.psum(q, "a"), axis_resources={"a": tx.SerialLoop(2)})(V)


def truth_value():
    if x():
        pass


def subclass_with_init():
    class Tagged(NamedArray):
        def __init__(self, data, axes, tag=None):
            super().__init__(data, axes)
            self.tag = tag


def annotated_return_not_listed():
    raise unlisted_return_error("body", "'batch feat'", "['batch', ...]", ["feat"])


def known_against_declared_placement():
    error = declared_placement_error("the return value of f", {"batch": ("x",), "feat": ("y",)}, {"batch": ("y",)})
    assert error is not None
    raise error


def known_whole_against_declared_split():
    error = declared_placement_error("argument 'w' of readout", {"hidden": ("model",)}, {"hidden": ()})
    assert error is not None
    raise error


def known_split_against_declared_whole():
    error = declared_placement_error("the return value of f", {"batch": ()}, {"batch": ("data",)})
    assert error is not None
    raise error


def declared_mesh_axis_known_taken():
    error = declared_placement_error("the return value of f", {"embed": ("y",)}, {"seq": ("y",)})
    assert error is not None
    raise error


def multi_process_without_a_mesh():
    # Only a multi-process run (jax.process_count() > 1) reaches globalize, so call it as xmap would there.
    from typed_xmap._xmap._global import globalize

    return globalize(None, None, {}, ())


def scan_placement():
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        xs = tx.shard(tx.named(jnp.ones((3, 8, 8)), ["layers", "batch", "feat"]), {"batch": "x"})
        return tx.scan(lambda c, p: (c + p, None), tnp.zeros({"batch": 8, "feat": 8}), xs, axis="layers")


def positional_scan_placement():
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        xs = tx.shard(tx.named(jnp.ones((3, 8, 8)), ["layers", "batch", "feat"]), {"batch": "x"})
        step = lambda c, p: ((c[0] + tx.positional(p, ["batch", "feat"]),), None)
        return tx.scan(step, (jnp.zeros((8, 8)),), xs, axis="layers")


def meshes_of_two_kinds():
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
        left = tx.shard(x(), {"batch": "x"})
    auto = jax.sharding.AxisType.Auto
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"), axis_types=(auto, auto))):
        right = tx.shard(x(), {"batch": "x"})
    return left + right


def resources_of_under_jit_on_auto_axes():
    auto = jax.sharding.AxisType.Auto
    with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"), axis_types=(auto, auto))):
        return jax.jit(lambda v: tx.resources_of(v) and v)(tx.shard(x(), {"batch": "x"}))


def normalise(message):
    """A message with its call site (``at PATH:LINE:COLUMN``, the user's line) as ``at FILE:LINE``.

    The permute error names the line of the user's ppermute, which moves whenever this file is edited.
    """
    return re.sub(r" at \S+:\d+:\d+ \(", " at FILE:LINE (", message)


CASES = {
    # _algebra/_spec.py
    "spec: not a string": (lambda: parse_named_axes(3), S, K.SYNTAX),
    "spec: separators alone": (lambda: parse_named_axes(" ,, "), S, K.SYNTAX),
    "spec: not an axis name": (lambda: parse_named_axes("batch 3d"), S, K.SYNTAX),
    "spec: bad size": (lambda: parse_named_axes("batch=3x in"), S, K.SYNTAX),
    "spec: axis listed twice": (lambda: parse_named_axes("a b a"), S, K.SYNTAX),
    "spec: not a group": (lambda: parse_shape_spec("*3d embed"), S, K.SYNTAX),
    "spec: two groups": (lambda: parse_shape_spec("*rest embed *more"), S, K.SYNTAX),
    "spec: no mesh axis after @": (lambda: parse_named_axes("batch@ seq"), S, K.SYNTAX),
    "spec: a mesh axis twice": (lambda: parse_named_axes("batch@(x, x)"), S, K.SYNTAX),
    "spec: ... twice": (lambda: parse_positional("n ... 3 ..."), S, K.SYNTAX),
    "spec: not a positional dim": (lambda: parse_positional("n 3.5"), S, K.SYNTAX),
    # _algebra/_shapes.py
    "shapes: size clash": (
        lambda: union_named_shapes([{"batch": 8, "feat": 4}, {"batch": 6}], operation="x + y", operands=["x", "y"]),
        E,
        K.AXIS_SIZE,
    ),
    # _algebra/_symbols.py (the plugin's symbolic sizes: a size from a config, cfg.mlp vs cfg.mlp // 2)
    "symbols: sizes that differ whatever the config": (
        lambda: meet_sizes(
            [{"embed": 8, "mlp": symbol("cfg.mlp")}, {"mlp": size_floordiv(symbol("cfg.mlp"), 2)}],
            operation="h * w_down",
            operands=["h", "w_down"],
        ),
        E,
        K.AXIS_SIZE,
    ),
    # _algebra/_containers.py (the plugin, where a container of NamedArrays is built)
    "containers: a field's size differs from another field's": (
        lambda: meet_fields(
            [
                ("['w_in']", {"feat": 4, "mlp": symbol("cfg.mlp")}),
                ("['w_out']", {"mlp": size_floordiv(symbol("cfg.mlp"), 2), "*rest": None}),
            ],
            container="Params",
        ),
        E,
        K.AXIS_SIZE,
    ),
    "shapes: reduce a missing axis": (
        lambda: reduce_named_shape({"batch": 8}, ["feat"], operation="tnp.sum(x, 'feat')", operand="x"),
        E,
        K.AXIS_MISSING,
    ),
    "shapes: reduce missing axes": (
        lambda: reduce_named_shape({"batch": 8}, ["feat", "out"], operation="tnp.sum(x, ('feat', 'out'))"),
        E,
        K.AXIS_MISSING,
    ),
    "shapes: positional dims": (
        lambda: broadcast_positional([(3, 4), (5,)], operation="x * y", operands=["x", "y"]),
        E,
        K.POSITIONAL,
    ),
    # _algebra/_indexing.py
    "indexing: a plain int on named axes": (lambda: x()[0], E, K.AXIS_MISSING),
    "indexing: key not a name": (lambda: x()[{0: 1}], E, K.SYNTAX),
    "indexing: unknown axis": (lambda: x()[{"feet": 0}], E, K.AXIS_MISSING),
    "jnp given a NamedArray": (lambda: jnp.exp(x()), E, K.INVALID_ARGUMENT),
    "indexing: out of bounds": (lambda: x()[{"batch": 8}], E, K.AXIS_SIZE),
    "indexing: bad slice": (lambda: x()[{"feat": slice(0, 4, 0)}], E, K.INVALID_ARGUMENT),
    "indexing: not an index": (lambda: x()[{"feat": jnp.arange(2)}], E, K.INVALID_ARGUMENT),
    "indexing: float index array": (
        lambda: x()[{"batch": tx.named(jnp.ones(3), ["k"])}],
        E,
        K.DTYPE,
    ),
    "indexing: gather size clash": (
        lambda: x()[{"batch": tx.named(jnp.zeros(3, jnp.int32), ["feat"])}],
        E,
        K.AXIS_SIZE,
    ),
    "indexing: two indices clash": (
        lambda: x()[
            {"batch": tx.named(jnp.zeros(3, jnp.int32), ["k"]), "feat": tx.named(jnp.zeros(2, jnp.int32), ["k"])}
        ],
        E,
        K.AXIS_SIZE,
    ),
    "indexing: update axis the region lacks": (
        lambda: x().at[{"batch": 0}].set(tx.named(jnp.ones(8), ["batch"])),
        E,
        K.AXIS_MISSING,
    ),
    "indexing: update size clash": (
        lambda: x().at[{"batch": 0}].add(tx.named(jnp.ones(3), ["feat"])),
        E,
        K.AXIS_SIZE,
    ),
    "dynamic_slice: starts and sizes differ": (
        lambda: tnp.dynamic_slice(x(), {"batch": 0}, {"feat": 2}),
        E,
        K.AXIS_MISSING,
    ),
    "dynamic_slice: size larger than the axis": (
        lambda: tnp.dynamic_slice(x(), {"batch": 0}, {"batch": 9}),
        E,
        K.AXIS_SIZE,
    ),
    # _algebra/_einsum.py
    "einsum: not a string": (lambda: parse_einsum(None), S, K.SYNTAX),
    "einsum: no arrow": (lambda: parse_einsum("{in},{in}"), S, K.SYNTAX),
    "einsum: unterminated brace": (lambda: parse_einsum("{in->{}"), S, K.SYNTAX),
    "einsum: two brace groups": (lambda: parse_einsum("{in}{out},{in}->{}"), S, K.SYNTAX),
    "einsum: not an axis name": (lambda: parse_einsum("{in,2x}->{}"), S, K.SYNTAX),
    "einsum: axis twice in an operand": (lambda: parse_einsum("{in,in}->{}"), S, K.SYNTAX),
    "einsum: diagonal letters": (lambda: parse_einsum("ii->i"), S, K.SYNTAX),
    "einsum: unexpected character": (lambda: parse_einsum("a.b->a"), S, K.SYNTAX),
    "einsum: output names a stray axis": (lambda: parse_einsum("{in}->{out}"), E, K.AXIS_MISSING),
    "einsum: output uses a stray letter": (lambda: parse_einsum("n{in}->m"), E, K.POSITIONAL),
    "einsum: operand count": (lambda: tnp.einsum("{i},{i}->{}", x()), E, K.INVALID_ARGUMENT),
    "einsum: operand lacks a braced axis": (lambda: tnp.einsum("{feat,out}->{}", x()), E, K.AXIS_MISSING),
    "einsum: operand carries an unlisted axis": (
        lambda: tnp.einsum("{feat},{batch,feat}->{}", x(), x()),
        E,
        K.AXIS_MISSING,
    ),
    "einsum: letters per positional dim": (lambda: tnp.einsum("n{batch,feat}->{}", x()), E, K.POSITIONAL),
    "einsum: letter sizes": (lambda: tnp.einsum("n,n->", jnp.ones(3), jnp.ones(4)), E, K.POSITIONAL),
    "einsum: too many axes": (many_axes, E, K.INVALID_ARGUMENT),
    # _annotations.py
    "annotation: not a dtype": (lambda: NamedArray["f32", "batch"], S, K.SYNTAX),
    "annotation: arguments": (lambda: NamedArray[f32], S, K.SYNTAX),
    "annotation: spec not a string": (lambda: NamedArray[f32, []], S, K.SYNTAX),
    # _typed.py
    "typed: size bound twice": (typed_call, E, K.AXIS_SIZE),
    "typed: group lacks an axis": (typed_group_return, E, K.AXIS_MISSING),
    "typed: container element": (typed_container, E, K.AXIS_MISSING),
    "typed: inside tx.vmap, the mapped axis called mapped": (typed_inside_vmap, E, K.AXIS_MISSING),
    "typed: an xmap body naming some mapped axes": (typed_xmap_body_naming_one_mapped_axis, E, K.AXIS_MISSING),
    "typed: TypedDict field": (typed_dict_field, E, K.AXIS_SIZE),
    "typed: TypedDict key missing": (typed_dict_key, E, K.INVALID_ARGUMENT),
    "typed: NamedTuple scan carry field": (named_tuple_scan_carry, E, K.AXIS_MISSING),
    "typed: placement": (typed_placement, E, K.PLACEMENT),
    "typed: placement whole": (typed_placement_whole, E, K.PLACEMENT),
    # _vmap.py, _scan.py, _algebra/_transforms.py
    "vmap: no axis": (lambda: tx.vmap(tnp.exp, axis=()), E, K.INVALID_ARGUMENT),
    "vmap: resources of an unmapped axis": (
        lambda: tx.vmap(tnp.exp, axis="batch", axis_resources={"feat": "x"}),
        E,
        K.AXIS_MISSING,
    ),
    "vmap: axis not a string": (lambda: tx.vmap(tnp.exp, axis=3)(x()), E, K.INVALID_ARGUMENT),
    "vmap: no argument carries the axis": (lambda: tx.vmap(tnp.exp, axis="seq")(x()), E, K.AXIS_MISSING),
    "vmap: sizes disagree": (
        lambda: tx.vmap(lambda a, b: a + b, axis="batch")(x(), tx.named(jnp.ones(3), ["batch"])),
        E,
        K.AXIS_SIZE,
    ),
    "scan: leaf lacks the axis": (
        lambda: tx.scan(lambda c, p: (c, None), 0.0, {**layers(), "b": jnp.ones(3)}, axis="layers"),
        E,
        K.AXIS_MISSING,
    ),
    "scan: carry loses an axis": (lambda: scan_carry(lambda c, p: tnp.sum(c, "batch")), E, K.AXIS_MISSING),
    "scan: carry changes size": (
        lambda: scan_carry(lambda c, p: tx.named(jnp.ones((3, 4)), ["batch", "embed"])),
        E,
        K.AXIS_SIZE,
    ),
    "scan: carry becomes positional": (
        lambda: scan_carry(lambda c, p: jnp.ones((2, 4))),
        E,
        K.INVALID_ARGUMENT,
    ),
    "scan: carry structure": (
        lambda: tx.scan(lambda c, p: ((c, c), None), 0.0, layers(), axis="layers"),
        E,
        K.INVALID_ARGUMENT,
    ),
    # the third fuzz round (issue 19): tests/test_fuzz_findings.py
    "vmap: axis listed twice": (lambda: tx.vmap(tnp.exp, axis=("batch", "batch")), E, K.INVALID_ARGUMENT),
    "scan: length disagrees": (
        lambda: tx.scan(lambda c, p: (c, None), 0.0, layers(), axis="layers", length=7),
        E,
        K.AXIS_SIZE,
    ),
    "scan: length not an int": (
        lambda: tx.scan(lambda c, p: (c, None), 0.0, layers(), axis="layers", length=2.5),
        E,
        K.INVALID_ARGUMENT,
    ),
    "scan: no leaves, no length": (
        lambda: tx.scan(lambda c, p: (c, None), 0.0, {}, axis="layers"),
        E,
        K.INVALID_ARGUMENT,
    ),
    "scan: body returns one value": (
        lambda: tx.scan(lambda c, p: c, 0.0, layers(), axis="layers"),
        E,
        K.INVALID_ARGUMENT,
    ),
    "scan: carry changes dtype": (lambda: scan_carry(lambda c, p: c.astype(jnp.int32)), E, K.DTYPE),
    "scan: carry changes placement": (scan_placement, E, K.INVALID_ARGUMENT),
    "scan: positional carry changes placement": (positional_scan_placement, E, K.INVALID_ARGUMENT),
    "indexing: positional int out of bounds": (
        lambda: tx.named(jnp.ones((8, 2)), ["batch", ...])[5],
        E,
        K.AXIS_SIZE,
    ),
    "constructors: size": (lambda: tnp.causal_mask("q", "k", -1), E, K.INVALID_ARGUMENT),
    "constructors: float tokens": (
        lambda: tnp.one_hot(tx.named(jnp.array([0.0, 1.0]), ["seq"]), "vocab", 4),
        E,
        K.DTYPE,
    ),
    "structure: broadcast to a negative size": (
        lambda: tx.broadcast_to(x(), {"batch": 8, "feat": 4, "k": -1}),
        E,
        K.INVALID_ARGUMENT,
    ),
    "structure: arange step 0": (lambda: tnp.arange("i", 0, 5, 0), E, K.INVALID_ARGUMENT),
    "spec: size beyond any array dim": (lambda: parse_named_axes("a=" + "9" * 30), S, K.SYNTAX),
    "operators: operands on meshes of two kinds": (meshes_of_two_kinds, E, K.INVALID_ARGUMENT),
    "resources_of: Auto axes under jit": (resources_of_under_jit_on_auto_axes, E, K.INVALID_ARGUMENT),
    "random: not a key": (lambda: tx.random.normal(3, {"a": 2}), E, K.INVALID_ARGUMENT),
    # _convert.py
    "named: already named": (
        lambda: tx.named(tx.named(jnp.ones((8, 4)), ["batch", ...]), ["batch"]),
        E,
        K.INVALID_ARGUMENT,
    ),
    "positional: not a NamedArray": (lambda: tx.positional(jnp.ones(3), ["batch"]), E, K.INVALID_ARGUMENT),
    "positional: unlisted axis": (lambda: tx.positional(x(), ["batch", ...]), E, K.AXIS_MISSING),
    "positional: lacking axis": (lambda: tx.positional(x(), ["batch", "feat", "out", ...]), E, K.AXIS_MISSING),
    "positional: too few positional dims": (lambda: tx.positional(x(), {2: "batch", 3: "feat"}), E, K.POSITIONAL),
    "positional: rank": (
        lambda: tx.positional(tx.named(jnp.ones((8, 4, 2)), ["batch", "feat", ...]), ["batch", "feat"]),
        E,
        K.POSITIONAL,
    ),
    # _sharding.py
    "shard: no mesh": (lambda: tx.shard(x(), {"batch": "x"}), E, K.INVALID_ARGUMENT),
    "shard: serial loop": (on_mesh(lambda: tx.shard(x(), {"batch": tx.SerialLoop(2)})), E, K.INVALID_ARGUMENT),
    "shard: unknown mesh axis": (on_mesh(lambda: tx.shard(x(), {"batch": "z"})), E, K.INVALID_ARGUMENT),
    "shard: axes= with a NamedArray": (
        on_mesh(lambda: tx.shard(x(), {"batch": "x"}, axes=["batch"])),
        E,
        K.INVALID_ARGUMENT,
    ),
    "shard: positional array without axes=": (
        on_mesh(lambda: tx.shard(jnp.ones((8, 4)), {"batch": "x"})),
        E,
        K.INVALID_ARGUMENT,
    ),
    "shard: memory kind": (on_mesh(lambda: tx.shard(x(), {"batch": "x"}, memory_kind="tape")), E, K.INVALID_ARGUMENT),
    "shard: inside jit": (on_mesh(lambda: jax.jit(lambda v: tx.shard(v, {"batch": "x"}))(x())), E, K.INVALID_ARGUMENT),
    "resources_of: not a NamedArray": (lambda: tx.resources_of(jnp.ones(3)), E, K.INVALID_ARGUMENT),
    # _visualize.py
    "visualize: not a NamedArray": (lambda: tx.visualize(jnp.ones(3)), E, K.INVALID_ARGUMENT),
    "visualize: a tracer": (
        lambda: jax.jit(lambda v: tx.visualize(tx.named(v, ["batch"])))(jnp.ones(8)),
        E,
        K.INVALID_ARGUMENT,
    ),
    # _algebra/_axis_map.py
    "axis map: name not a string": (lambda: tx.named(jnp.ones(3), [3]), E, K.SYNTAX),
    "axis map: name not an identifier": (lambda: tx.named(jnp.ones(3), ["2x"]), E, K.SYNTAX),
    "axis map: rank": (lambda: xm(["a"], ["a"])(np.ones((4, 3))), E, K.POSITIONAL),
    "axis map: dim beyond the rank": (lambda: tx.named(jnp.ones(3), {2: "batch"}), E, K.POSITIONAL),
    "axis map: not a list or dict": (lambda: tx.named(jnp.ones(3), "batch"), E, K.SYNTAX),
    "axis map: dim maps to None": (lambda: tx.named(jnp.ones(3), {0: None}), E, K.SYNTAX),
    "axis map: name twice": (lambda: tx.named(jnp.ones((3, 3)), ["a", "a"]), E, K.SYNTAX),
    "axis map: key not an int": (lambda: tx.named(jnp.ones(3), {"0": "a"}), E, K.SYNTAX),
    "axis map: negative dim": (lambda: tx.named(jnp.ones(3), {-1: "a"}), E, K.SYNTAX),
    "axis map: ... not last": (lambda: tx.named(jnp.ones((3, 3)), [..., "a"]), E, K.SYNTAX),
    # _algebra/_out_axes.py
    "out axes: output carries an unlisted axis": (
        lambda: xm(["a", "b", ...], ["a", ...])(np.ones((2, 4))),
        E,
        K.AXIS_MISSING,
    ),
    # the mypy plugin's message (tests/plugin/test_calls_xmap.yml meets it as a user does), from its algebra
    "out axes: annotated return not listed": (
        annotated_return_not_listed,
        E,
        K.AXIS_MISSING,
    ),
    # _algebra/_reductions.py
    "reduce: name twice": (lambda: tnp.sum(x(), ("batch", "batch")), E, K.SYNTAX),
    "reduce: dim twice": (lambda: tnp.sum(tx.named(jnp.ones((8, 4, 3)), ["batch", ...]), (0, -2)), E, K.POSITIONAL),
    "reduce: argmax over two axes": (lambda: tnp.argmax(x(), ("batch", "feat")), E, K.INVALID_ARGUMENT),
    "reduce: dim out of range": (lambda: tnp.sum(x(), 0), E, K.POSITIONAL),
    "reduce: bool axis": (lambda: tnp.sum(x(), True), E, K.SYNTAX),
    "reduce: float axis": (lambda: tnp.sum(x(), 1.5), E, K.SYNTAX),
    # _algebra/_resources.py
    "resources: two axes on one mesh axis": (
        on_mesh(lambda: xm(["a", "b", ...], ["a", "b", ...], axis_resources={"a": "x", "b": "x"})(np.ones((4, 4)))),
        C,
        K.RESOURCE_CONFLICT,
    ),
    "resources: two axes on one serial loop": (two_axes_on_a_named_loop, C, K.RESOURCE_CONFLICT),
    "placement: two axes on one mesh axis in a result": (
        lambda: broadcast_placement(["batch", "heads"], [{"batch": ("x",)}, {"heads": ("x",)}], operation="x * y"),
        C,
        K.RESOURCE_CONFLICT,
    ),
    "placement: a contraction's result on an Explicit mesh": (
        lambda: placed_contraction(lambda h, w: tnp.einsum("{batch,seq,embed},{embed,mlp}->{batch,seq,mlp}", h, w)),
        C,
        K.RESOURCE_CONFLICT,
    ),
    "placement: a dot's result on an Explicit mesh": (
        lambda: placed_contraction(lambda h, w: jax.jit(lambda a, b: tnp.dot(a, b, axis="embed"))(h, w)),
        C,
        K.RESOURCE_CONFLICT,
    ),
    # the mypy plugin's message (tests/plugin/test_placement.yml meets it as a user does), from its algebra
    "placement: known placement against a declared one": (
        known_against_declared_placement,
        E,
        K.PLACEMENT,
    ),
    "placement: a declared mesh axis the value splits along another axis": (
        declared_mesh_axis_known_taken,
        E,
        K.PLACEMENT,
    ),
    "placement: a known-whole value where a split is declared": (known_whole_against_declared_split, E, K.PLACEMENT),
    "placement: a split value where whole is declared": (known_split_against_declared_whole, E, K.PLACEMENT),
    "resources: not a dict": (lambda: xm(axis_resources=["x"]), E, K.INVALID_ARGUMENT),
    "resources: serial loop length": (lambda: tx.SerialLoop(0), E, K.INVALID_ARGUMENT),
    "resources: no resource": (lambda: xm(axis_resources={"a": ()}), E, K.INVALID_ARGUMENT),
    "resources: mesh axis twice": (lambda: xm(axis_resources={"a": ("x", "x")}), E, K.INVALID_ARGUMENT),
    "resources: empty axis": (
        on_mesh(lambda: tx.shard(tx.named(jnp.ones(0), ["a"]), {"a": "x"})),
        E,
        K.INVALID_ARGUMENT,
    ),
    "resources: not divisible": (on_mesh(lambda: tx.shard(tx.named(jnp.ones(6), ["a"]), {"a": "x"})), E, K.AXIS_SIZE),
    "resources: not a resource": (lambda: xm(axis_resources={"a": 3}), E, K.INVALID_ARGUMENT),
    # numpy/_mapped_axes.py
    "mapped: unbound axis": (lambda: tnp.mean(jnp.ones(3), axis="i"), U, K.UNBOUND_AXIS),
    # _named_array.py
    "named array: a dim and mapped": (lambda: NamedArray(jnp.ones(3), ["a"], [("a", 3)]), E, K.AXIS_MISSING),
    "named array: vmap over a named axis": (lambda: jax.vmap(lambda v: v + 1)(x()), E, K.POSITIONAL),
    "named array: two dims one name": (lambda: NamedArray(jnp.ones((3, 3)), ["a", "a"]), E, K.SYNTAX),
    "named array: a subclass with __init__": (subclass_with_init, E, K.INVALID_ARGUMENT),
    "named array: an unreadable pickle": (
        lambda: object.__new__(NamedArray).__setstate__([1, 2]),
        E,
        K.INVALID_ARGUMENT,
    ),
    "named array: truth value": (truth_value, E, K.AXIS_MISSING),
    "named array: float of named axes": (lambda: float(x()), E, K.AXIS_MISSING),
    "named array: jax.grad of a NamedArray": (
        lambda: jax.grad(lambda w: tnp.sum(x() * w, ("batch", "feat")))(1.0),
        E,
        K.INVALID_ARGUMENT,
    ),
    "named array: jax.grad with named axes left": (
        lambda: jax.grad(lambda w: tnp.sum(x() * w, "batch"))(1.0),
        E,
        K.INVALID_ARGUMENT,
    ),
    "named array: JAX takes it for an array": (lambda: jax.typeof(x()), E, K.INVALID_ARGUMENT),
    # _xmap/_api.py
    "xmap: no out_axes": (lambda: xmap(identity, in_axes=["a", ...]), E, K.INVALID_ARGUMENT),
    "xmap: empty out_axes": (lambda: xmap(identity, in_axes=["a", ...], out_axes=()), E, K.INVALID_ARGUMENT),
    # _xmap/_body.py
    "xmap: out_axes dim beyond the result": (lambda: xm(out_axes={2: "a"})(V), E, K.POSITIONAL),
    "xmap: output rank": (lambda: xm(out_axes=["a"])(np.ones((4, 3))), E, K.POSITIONAL),
    "xmap: output carries a foreign axis": (
        lambda: xm(fun=lambda v: tx.named(v, ["z"]))(np.ones((4, 3))),
        E,
        K.AXIS_MISSING,
    ),
    # _xmap/_checks.py
    "xmap: another mesh inside": (on_mesh(inner_xmap_on_another_mesh), E, K.INVALID_ARGUMENT),
    "xmap: undefined axis": (lambda: xm(out_axes=["b", ...])(V), E, K.AXIS_MISSING),
    "xmap: nested xmap reuses an axis": (inner_xmap_reusing_an_axis, E, K.AXIS_MISSING),
    "xmap: resource without a mesh": (lambda: xm(axis_resources={"a": "x"})(V), E, K.INVALID_ARGUMENT),
    "xmap: unknown mesh axis": (on_mesh(lambda: xm(axis_resources={"a": "z"})(V)), E, K.INVALID_ARGUMENT),
    # _xmap/_config.py
    "xmap: axis_sizes not a dict": (lambda: xm(axis_sizes=[("a", 8)]), E, K.INVALID_ARGUMENT),
    "xmap: negative size": (lambda: xm(axis_sizes={"a": -1}), E, K.INVALID_ARGUMENT),
    "xmap: donate_argnums type": (lambda: xm(donate_argnums="0"), E, K.INVALID_ARGUMENT),
    "xmap: donate_argnums out of range": (lambda: xm(donate_argnums=3), E, K.INVALID_ARGUMENT),
    "xmap: donated argument not given": (
        lambda: xm((["a", ...],), fun=lambda *a: a[0], donate_argnums=1)(V),
        E,
        K.INVALID_ARGUMENT,
    ),
    # _xmap/_conflicts.py
    "xmap: broadcast output conflicts": (
        on_mesh(
            lambda: xm(
                ["j", ...],
                ["j", ...],
                xm([], ["i"], axis_sizes={"i": 4}, axis_resources={"i": "x"}),
                axis_resources={"j": "x"},
            )(np.arange(4))
        ),
        C,
        K.RESOURCE_CONFLICT,
    ),
    # _xmap/_global.py
    "xmap: multi-process without a mesh": (multi_process_without_a_mesh, E, K.INVALID_ARGUMENT),
    # _xmap/_jax_errors.py
    "xmap: unbound collective axis": (lambda: xm(fun=lambda v: lax.psum(v, "z"))(V), U, K.UNBOUND_AXIS),
    "xmap: collective over a serial loop": (collective_over_a_loop_axis, E, K.INVALID_ARGUMENT),
    "xmap: permute over two axes": (permute_over_two_axes, E, K.INVALID_ARGUMENT),
    "xmap: committed to other devices": (committed_to_other_devices, E, K.INVALID_ARGUMENT),
    "xmap: not an array": (lambda: xm([...], [...])("abc"), E, K.INVALID_ARGUMENT),
    # _xmap/_specs.py
    "xmap: size not inferable": (lambda: xm(["i", ...], ["i", ...], lambda *vs: 1.0)(), E, K.AXIS_MISSING),
    "xmap: None spec": (lambda: xm(None), E, K.INVALID_ARGUMENT),
    "xmap: not a tree prefix": (lambda: xm((["a", ...], ["a", ...]))(V), E, K.INVALID_ARGUMENT),
    "xmap: no in_axes, positional argument": (lambda: xmap(identity, out_axes=["a", ...])(V), E, K.INVALID_ARGUMENT),
    "xmap: in_axes names a carried axis": (
        lambda: xm(["batch", ...], ["batch", ...])(tx.named(jnp.ones((8, 4, 3)), ["batch", "feat", ...])),
        E,
        K.AXIS_MISSING,
    ),
    "xmap: sizes disagree": (lambda: xm((["a", ...], ["a", ...]), fun=lambda u, v: u)(V, np.ones(4)), E, K.AXIS_SIZE),
    # _algebra/_structure.py (through tx.rename, tx.merge_axes, tnp.stack, ... as users meet them)
    "structure: not an axis name": (lambda: tnp.stack([x()], axis="2nd"), E, K.SYNTAX),
    "structure: rename a missing axis": (lambda: tx.rename(x(), {"seq": "kv_seq"}), E, K.AXIS_MISSING),
    "structure: new axis exists": (lambda: tnp.one_hot(x().astype(jnp.int32), "feat", 3), E, K.AXIS_MISSING),
    "structure: shape not a dict": (lambda: tnp.zeros([2, 3]), E, K.INVALID_ARGUMENT),
    "structure: renames not a dict": (lambda: tx.rename(x(), "batch"), E, K.INVALID_ARGUMENT),
    "structure: no operands": (lambda: tnp.concatenate([], axis="seq"), E, K.INVALID_ARGUMENT),
    "structure: bad sections": (lambda: tnp.split(x(), axis="batch", sections="2"), E, K.INVALID_ARGUMENT),
    "structure: sections do not add up": (lambda: tnp.split(x(), axis="batch", sections=[3, 4]), E, K.AXIS_SIZE),
    "structure: merge axes not a tuple": (lambda: tx.merge_axes(x(), "batch", "bf"), E, K.INVALID_ARGUMENT),
    "structure: merge an axis twice": (lambda: tx.merge_axes(x(), ("batch", "batch"), "bb"), E, K.SYNTAX),
    "structure: split into nothing": (lambda: tx.split_axis(x(), "feat", {}), E, K.INVALID_ARGUMENT),
    "structure: split sizes": (lambda: tx.split_axis(x(), "feat", {"heads": 3, "head_dim": 2}), E, K.AXIS_SIZE),
    "structure: pad widths not a dict": (lambda: tnp.pad(x(), [(1, 0)]), E, K.INVALID_ARGUMENT),
    "structure: mask over one axis": (lambda: tnp.causal_mask("seq", "seq", 4), E, K.AXIS_MISSING),
    "structure: negative size": (lambda: tnp.ones({"batch": -2}), E, K.INVALID_ARGUMENT),
    "structure: rename clash": (lambda: tx.rename(x(), {"batch": "feat"}), E, K.AXIS_MISSING),
    "structure: operands' axes differ": (
        lambda: tnp.stack([x(), tx.named(jnp.ones(8), ["batch"])], axis="layers"),
        E,
        K.AXIS_MISSING,
    ),
    "structure: unequal parts": (lambda: tnp.split(x(), axis="feat", sections=3), E, K.AXIS_SIZE),
    "structure: broadcast drops an axis": (lambda: tx.broadcast_to(x(), {"batch": 8}), E, K.AXIS_MISSING),
    "structure: broadcast size": (lambda: tx.broadcast_to(x(), {"batch": 8, "feat": 5}), E, K.AXIS_SIZE),
    "structure: pad width": (lambda: tnp.pad(x(), {"feat": 1}), E, K.INVALID_ARGUMENT),
    "structure: concatenate sizes": (
        lambda: tnp.concatenate([x(), tx.named(jnp.ones((3, 4)), ["feat", "batch"])], axis="feat"),
        E,
        K.AXIS_SIZE,
    ),
    "structure: positional dims differ": (
        lambda: tnp.concatenate([x(), tx.named(jnp.ones((3, 8, 4)), {1: "batch", 2: "feat"})], axis="feat"),
        E,
        K.POSITIONAL,
    ),
    # _structure.py
    "structure: not a NamedArray": (lambda: tnp.cumsum(jnp.ones(3), axis="seq"), E, K.INVALID_ARGUMENT),
    # _algebra/_windows.py, _algebra/_selection.py, _ops/_tnp/_windows.py (windows and selection by name)
    "windows: spatial not a dict": (lambda: tnp.conv(image(), kernel(), ["height"], "channels"), E, K.INVALID_ARGUMENT),
    "windows: contract not names": (
        lambda: tnp.conv(image(), kernel(), {"height": "kh"}, 3),
        E,
        K.INVALID_ARGUMENT,  # type: ignore[arg-type]
    ),
    "windows: contracted size clash": (
        lambda: tnp.conv(image(), kernel(channels=4), {"height": "kh", "width": "kw"}, "channels"),
        E,
        K.AXIS_SIZE,
    ),
    "windows: groups do not divide the outputs": (
        lambda: tnp.conv(
            image(), kernel(channels=1), {"height": "kh", "width": "kw"}, "channels", feature_group_count=3
        ),
        E,
        K.AXIS_SIZE,
    ),
    "windows: output axis clashes": (
        lambda: tnp.conv(image(), kernel(out="batch"), {"height": "kh", "width": "kw"}, "channels"),
        E,
        K.AXIS_MISSING,
    ),
    "windows: stride of another axis": (
        lambda: tnp.conv(image(), kernel(), {"height": "kh", "width": "kw"}, "channels", strides={"depth": 2}),
        E,
        K.AXIS_MISSING,
    ),
    "windows: stride not positive": (
        lambda: tnp.conv(image(), kernel(), {"height": "kh", "width": "kw"}, "channels", strides=0),
        E,
        K.INVALID_ARGUMENT,
    ),
    "windows: bad padding": (
        lambda: tnp.conv(image(), kernel(), {"height": "kh", "width": "kw"}, "channels", padding="FULL"),
        E,
        K.INVALID_ARGUMENT,
    ),
    "windows: window longer than the axis": (
        lambda: tnp.max_pool(image(), {"height": 2, "width": 9}, padding={"width": (1, 0)}),
        E,
        K.AXIS_SIZE,
    ),
    "windows: transposed input shorter than its window": (
        lambda: tnp.conv_transpose(
            tx.named(jnp.ones((2, 2, 5, 3)), ["batch", "height", "width", "channels"]),
            tx.named(jnp.ones((5, 3, 3, 4)), ["kh", "kw", "channels", "out"]),
            {"height": "kh", "width": "kw"},
            "channels",
            strides=2,
            padding=0,
        ),
        E,
        K.AXIS_SIZE,
    ),
    "windows: window not a dict": (lambda: tnp.avg_pool(image(), 2), E, K.INVALID_ARGUMENT),  # type: ignore[arg-type]
    "windows: pooled size of a split axis the mesh axis does not divide": (
        on_mesh(lambda: tnp.max_pool(tx.shard(image(), {"height": "y"}), {"height": 2}, strides={"height": 1})),
        E,
        K.AXIS_SIZE,
    ),
    "windows: positional kernel dims": (
        lambda: tnp.conv(
            image(), tx.named(jnp.ones((2, 3, 3, 3)), {1: "kh", 2: "kw", 3: "channels"}), {"height": "kh"}, "channels"
        ),
        E,
        K.POSITIONAL,
    ),
    "windows: a level changes length": (
        lambda: xm(["batch", "height", "width", "channels", ...], ["batch", "height", "width", ...], strided_pool)(
            np.ones((2, 6, 5, 3), np.float32)
        ),
        E,
        K.AXIS_SIZE,
    ),
    "selection: k not positive": (
        lambda: tnp.top_k(image(), 0, axis="channels", new_axis="choice"),
        E,
        K.INVALID_ARGUMENT,
    ),
    "selection: k too large": (lambda: tnp.top_k(image(), 4, axis="channels", new_axis="choice"), E, K.AXIS_SIZE),
    # _algebra/_segments.py, _ops/_tnp/_segments.py
    "segments: num_segments": (lambda: tnp.segment_sum(edges(), SEGMENT_IDS, 0, "edge", "node"), E, K.INVALID_ARGUMENT),
    "segments: ids without the axis": (
        lambda: tnp.segment_sum(edges(), tx.named(SEGMENT_IDS, ["node"]), 3, "edge", "node"),
        E,
        K.AXIS_MISSING,
    ),
    "segments: ids of another size": (
        lambda: tnp.segment_sum(edges(), SEGMENT_IDS[:5], 3, "edge", "node"),
        E,
        K.AXIS_SIZE,
    ),
    "segments: ids with positional dims": (
        lambda: tnp.segment_sum(edges(), tx.named(jnp.zeros((6, 2), int), ["edge", ...]), 3, "edge", "node"),
        E,
        K.POSITIONAL,
    ),
    "segments: ids not 1-d": (
        lambda: tnp.segment_sum(edges(), jnp.zeros((6, 2), int), 3, "edge", "node"),
        E,
        K.POSITIONAL,
    ),
    "segments: float ids": (lambda: tnp.segment_max(edges(), jnp.zeros(6), 3, "edge", "node"), E, K.DTYPE),
    "selection: sort along a missing axis": (lambda: tnp.sort(image(), "depth"), E, K.AXIS_MISSING),
    "selection: sample along a missing axis": (
        lambda: tx.random.categorical(jax.random.key(0), image(), "vocab"),
        E,
        K.AXIS_MISSING,
    ),
    "selection: new axis exists": (lambda: tnp.zeros_like(image(), new_axes={"batch": 2}), E, K.AXIS_MISSING),
    # _ops/_devices.py
    "fitting_mesh: shape and names differ": (lambda: tx.fitting_mesh((4, 2), ("x",)), E, K.INVALID_ARGUMENT),
    # issue 28: moe routing, allocation bound, draws, windows, fitting_mesh
    "moe: no token axes": (lambda: tx.moe_route(router(), 2, 3, tokens=()), E, K.INVALID_ARGUMENT),
    "moe: a token axis twice": (lambda: tx.moe_route(router(), 2, 3, tokens=("seq", "seq")), E, K.INVALID_ARGUMENT),
    "moe: k out of range": (lambda: tx.moe_route(router(), 5, 3), E, K.INVALID_ARGUMENT),
    "moe: capacity out of range": (lambda: tx.moe_route(router(), 2, 10**12), E, K.INVALID_ARGUMENT),
    "moe: expert not a name": (lambda: tx.moe_route(router(), 2, 3, expert=3), E, K.INVALID_ARGUMENT),  # type: ignore[arg-type]
    "moe: dispatch of a value with an expert axis": (
        lambda: tx.moe_dispatch(router(), tx.moe_route(router(), 1, 2)[0]),
        E,
        K.AXIS_MISSING,
    ),
    "memory: more than the devices hold": (on_16_gib(lambda: tnp.zeros({"a": 10**12, "b": 10**12})), E, K.AXIS_SIZE),
    "memory: an empty value XLA cannot build": (on_16_gib(lambda: tnp.zeros({"a": 10**12, "b": 0})), E, K.AXIS_SIZE),
    "selection: sample along an empty axis": (
        lambda: tx.random.categorical(jax.random.key(0), tx.named(jnp.ones((0, 3)), ["vocab", "batch"]), "vocab"),
        E,
        K.AXIS_SIZE,
    ),
    "selection: integer logits": (
        lambda: tx.random.categorical(
            jax.random.key(0), tx.named(jnp.ones((2, 3), jnp.int32), ["vocab", "batch"]), "vocab"
        ),
        E,
        K.DTYPE,
    ),
    "selection: randint of floats": (
        lambda: tx.random.randint(jax.random.key(0), {"a": 3}, 0, 5, jnp.float32),
        E,
        K.DTYPE,
    ),
    "windows: one kernel axis for two spatial axes": (
        lambda: tnp.conv(image(), kernel(), {"height": "kh", "width": "kh"}, "channels"),
        E,
        K.AXIS_MISSING,
    ),
    "windows: zero-size window": (
        lambda: tnp.conv(
            image(),
            tx.named(jnp.ones((0, 3, 3, 4)), ["kh", "kw", "channels", "out"]),
            {"height": "kh", "width": "kw"},
            "channels",
        ),
        E,
        K.AXIS_SIZE,
    ),
    "fitting_mesh: a mesh axis name twice": (lambda: tx.fitting_mesh((4, 2), ("x", "x")), E, K.INVALID_ARGUMENT),
}


MESSAGES = {
    "spec: not a string": (
        'a named-shape spec must be a string such as "batch=32 features", got 3 of type int. Fix: write '
        'the names in one string, separated by spaces or commas; "" for none'
    ),
    "spec: separators alone": (
        "invalid spec ' ,, ': commas separate names, but there are none\n"
        "     ,, \n"
        "     ^^\n"
        'fix: write "" for no names, or names between the commas: "batch, features"'
    ),
    "spec: not an axis name": (
        "invalid spec 'batch 3d': '3d' is not an axis name\n"
        "    batch 3d\n"
        "          ^^\n"
        'fix: axis names are Python identifiers, optionally with a size: "batch=32 in_features"'
    ),
    "spec: bad size": (
        "invalid spec 'batch=3x in': the size of axis 'batch' must be a non-negative integer, got "
        "'3x'\n"
        "    batch=3x in\n"
        "          ^^\n"
        "fix: write batch=SIZE with an integer SIZE, or just batch"
    ),
    "spec: axis listed twice": (
        "invalid spec 'a b a': axis 'a' is listed twice\n"
        "    a b a\n"
        "        ^\n"
        "fix: list each named axis once; named axes are order-free"
    ),
    "spec: not a group": (
        "invalid spec '*3d embed': '*3d' is not a group: a group is '*' and a name\n"
        "    *3d embed\n"
        "    ^^^\n"
        'fix: write one group of the other named axes as *NAME: "*rest embed"'
    ),
    "spec: two groups": (
        "invalid spec '*rest embed *more': a second group '*more' (after '*rest')\n"
        "    *rest embed *more\n"
        "                ^^^^^\n"
        "fix: use at most one *group per spec; it binds all the named axes the spec does not list"
    ),
    "spec: no mesh axis after @": (
        "invalid spec 'batch@ seq': '@' names no mesh axis\n"
        "    batch@ seq\n"
        "         ^\n"
        "fix: after @ write the mesh axis the named axis is split over, or a parenthesized tuple of them: "
        '"batch@data seq" or "batch@(x,y) seq" ("batch@()": whole, split over none)'
    ),
    "spec: a mesh axis twice": (
        "invalid spec 'batch@(x, x)': '@(x, x)' lists a mesh axis twice\n"
        "    batch@(x, x)\n"
        "         ^^^^^^^\n"
        "fix: list each mesh axis once: one named axis is split over distinct mesh axes"
    ),
    "spec: ... twice": (
        "invalid spec 'n ... 3 ...': '...' appears twice\n"
        "    n ... 3 ...\n"
        "            ^^^\n"
        "fix: use '...' at most once among the positional dims"
    ),
    "spec: not a positional dim": (
        "invalid spec 'n 3.5': '3.5' is not a positional dim\n"
        "    n 3.5\n"
        "      ^^^\n"
        "fix: positional dims are integers, symbols (bound per call), '_' (any size) or '...'"
    ),
    "shapes: size clash": (
        "axis 'batch' has size 8 in x ('batch=8 feat=4') but size 6 in y ('batch=6') in x + y; values "
        "broadcast by name, so one axis name must have one size. Fix: rename one of the axes, or slice "
        "the larger to the smaller size: x[{'batch': slice(0, 6)}]"
    ),
    "symbols: sizes that differ whatever the config": (
        "axis 'mlp' has size cfg.mlp in h ('embed=8 mlp=cfg.mlp') but size cfg.mlp // 2 in w_down "
        "('mlp=cfg.mlp // 2') in h * w_down; values meet by name, so one axis name must have one size, and these "
        "differ whatever the config. Fix: build both from the same size, or rename one of the axes"
    ),
    "containers: a field's size differs from another field's": (
        "axis 'mlp' has size cfg.mlp in field ['w_in'] ('feat=4 mlp=cfg.mlp') but size cfg.mlp // 2 in field "
        "['w_out'] ('mlp=cfg.mlp // 2') in the Params built here (@tx.typed binds one size per axis name across a "
        "container's fields); "
        "values meet by name, so one axis name must have one size, and these differ whatever the config. Fix: build "
        "both from the same size, or rename one of the axes"
    ),
    "shapes: reduce a missing axis": (
        "tnp.sum(x, 'feat') reduces over axis 'feat', but x has named axes 'batch=8'. Fix: reduce over "
        "axes the value has, or check the axis name's spelling"
    ),
    "shapes: reduce missing axes": (
        "tnp.sum(x, ('feat', 'out')) reduces over axes 'feat', 'out', but the operand has named axes "
        "'batch=8'. Fix: reduce over axes the value has, or check the axis name's spelling"
    ),
    "shapes: positional dims": (
        "positional dims do not broadcast in x * y: x has shape (3, 4) and y has shape (5,) (dim -1: 4 "
        "vs 5). Fix: make the positional shapes broadcastable, or name the axes so they broadcast by "
        "name"
    ),
    # _algebra/_indexing.py
    "indexing: a plain int on named axes": (
        "x[0] indexes positional dims, but x has 0 positional dim(s) and named axes 'batch=8 feat=4'; a named"
        " axis has no position. Fix: index by name, e.g. x[{'batch': i}]"
    ),
    "indexing: key not a name": (
        "x[{0: 1}]: a key of the index is an axis name (str), got 0. Fix: key the dict by axis name; index "
        "positional dims with x[i] or tx.positional(x, ...) first"
    ),
    "indexing: unknown axis": (
        "x[{'feet': 0}] names axis 'feet', but x has named axes 'batch=8 feat=4'. Fix: name an axis the "
        "value has, or check the axis name's spelling"
    ),
    "jnp given a NamedArray": (
        "a jax.numpy function got NamedArray(float32[batch=8, feat=4]): jnp works on positional arrays and would "
        "drop its named axes. Fix: use typed_xmap.numpy (tnp.exp(x), tnp.sum(x, 'batch'), ...), or "
        "tx.positional(x, ['batch', 'feat', ...]) for a positional array"
    ),
    "indexing: out of bounds": (
        "x[{'batch': 8}]: index 8 is out of bounds for axis 'batch' of size 8. Fix: use an index in [-8, 8), "
        "as numpy does"
    ),
    "indexing: bad slice": (
        "x[{'feat': slice(0, 4, 0)}]: a slice of axis 'feat' takes int bounds and a nonzero step, got "
        "slice(0, 4, 0). Fix: for a start known only at run time, tnp.dynamic_slice(x, {'feat': start}, "
        "{'feat': size})"
    ),
    "indexing: not an index": (
        "x[{'feat': ...}]: the index of axis 'feat' is a positional array of shape (2,) (name its axes: "
        "tx.named(i, [...])); an index is an int, a slice, a 0-d integer array or an integer NamedArray. Fix:"
        " pass one of those"
    ),
    "indexing: float index array": (
        "x[{'batch': <float32[k=3]>}]: the index of 'batch' (axis 'batch') has dtype float32; a gather takes "
        "integer indices. Fix: cast it (i.astype(jnp.int32)), or select with a mask: tnp.where(mask, x, 0)"
    ),
    "indexing: gather size clash": (
        "x[{'batch': <int32[feat=3]>}]: axis 'feat' has size 3 in the index of 'batch' but size 4 in x's "
        "remaining axes; an index axis that x keeps is read pointwise, so the sizes must agree. Fix: rename "
        "the index's axis (it then adds a new axis to the result), or slice the larger to the smaller size: "
        "x[{'feat': slice(0, 3)}]"
    ),
    "indexing: two indices clash": (
        "x[{'batch': <int32[k=3]>, 'feat': <int32[k=2]>}]: axis 'k' has size 2 in the index of 'feat' but "
        "size 3 in the index of 'batch'; an index axis that x keeps is read pointwise, so the sizes must "
        "agree. Fix: rename the index's axis (it then adds a new axis to the result), or slice the larger to "
        "the smaller size: x[{'k': slice(0, 2)}]"
    ),
    "indexing: update axis the region lacks": (
        "x.at[{'batch': 0}].set(v): the update v has axis 'batch', but the indexed region has named axes "
        "'feat=4'. Fix: reduce or index 'batch' out of v first, or index fewer axes of x"
    ),
    "indexing: update size clash": (
        "x.at[{'batch': 0}].add(v): axis 'feat' has size 3 in the update v but size 4 in the indexed region "
        "('feat=4'). Fix: give v size 4 along 'feat', or index a region of v's size: x.at[{'feat': slice(0, "
        "3)}]"
    ),
    "dynamic_slice: starts and sizes differ": (
        "tnp.dynamic_slice(x, {'batch': ...}, {'feat': 2}): start_indices names axes ['batch'] but slice_sizes "
        "names ['feat']. Fix: give one start and one size for each sliced axis"
    ),
    "dynamic_slice: size larger than the axis": (
        "tnp.dynamic_slice(x, {'batch': ...}, {'batch': 9}): slice_sizes['batch'] is 9, but a slice size is a "
        "static int in [0, 8] (the axis's size). Fix: pass a Python int no larger than the axis"
    ),
    "einsum: not a string": (
        "an einsum spec must be a string, got None of type NoneType. "
        "Fix: write it as a string, e.g. '{in},{in,out}->{out}'"
    ),
    "einsum: no arrow": (
        "invalid spec '{in},{in}': the spec needs exactly one '->'\n"
        "    {in},{in}\n"
        "    ^^^^^^^^^\n"
        "fix: write inputs->output, e.g. '{in},{in,out}->{out}'"
    ),
    "einsum: unterminated brace": (
        "invalid spec '{in->{}': unterminated named-axis brace\n    {in->{}\n    ^^^\nfix: close every '{' with '}'"
    ),
    "einsum: two brace groups": (
        "invalid spec '{in}{out},{in}->{}': a second brace group in one operand\n"
        "    {in}{out},{in}->{}\n"
        "        ^^^^^\n"
        "fix: list all of an operand's named axes in one {...}"
    ),
    "einsum: not an axis name": (
        "invalid spec '{in,2x}->{}': '2x' is not an axis name\n"
        "    {in,2x}->{}\n"
        "        ^^\n"
        "fix: named axes in braces are identifiers separated by commas"
    ),
    "einsum: axis twice in an operand": (
        "invalid spec '{in,in}->{}': axis 'in' appears twice in one operand\n"
        "    {in,in}->{}\n"
        "        ^^\n"
        "fix: list each named axis once per operand"
    ),
    "einsum: diagonal letters": (
        "invalid spec 'ii->i': positional letter 'i' appears twice in one operand\n"
        "    ii->i\n"
        "     ^\n"
        "fix: repeated (diagonal) positional letters are not supported"
    ),
    "einsum: unexpected character": (
        "invalid spec 'a.b->a': unexpected character '.'\n"
        "    a.b->a\n"
        "     ^\n"
        "fix: operands are positional letters plus one {name,...} group"
    ),
    "einsum: output names a stray axis": (
        "einsum '{in}->{out}': the output names axes 'out' that no operand mentions. Fix: mention them "
        "in an operand's braces, or drop them from the output"
    ),
    "einsum: output uses a stray letter": (
        "einsum 'n{in}->m': the output uses positional letters 'm' that no operand has. Fix: use letters of the inputs"
    ),
    "einsum: operand count": (
        "einsum '{i},{i}->{}' has 2 operand specs but was given 1 operand. Fix: give one "
        "comma-separated spec per operand"
    ),
    "einsum: operand lacks a braced axis": (
        "einsum '{feat,out}->{}': operand 0 has named axes 'batch feat' and lacks 'out', which its "
        "braces list. Fix: pass a value with those axes, or drop them from its braces"
    ),
    "einsum: operand carries an unlisted axis": (
        "einsum '{feat},{batch,feat}->{}': operand 0 carries axis 'batch', which the spec mentions for "
        "other operands but not in operand 0's braces. Fix: list it in its braces"
    ),
    "einsum: letters per positional dim": (
        "einsum 'n{batch,feat}->{}': operand 0 has 0 positional dims () but its spec 'n' has 1 letter. "
        "Fix: one letter per positional dim"
    ),
    "einsum: letter sizes": (
        "einsum 'n,n->': positional letter 'n' has size 3 in operand 0 but size 4 in operand 1. Fix: "
        "make the dims agree"
    ),
    "einsum: too many axes": (
        "einsum '{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, "
        "a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, "
        "a38, a39, a40, a41, a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52}->{}': too many "
        "distinct axes for one einsum (at most 52 positional letters and names together). "
        "Fix: split the contraction into two einsums"
    ),
    "annotation: not a dtype": (
        "NamedArray['f32', ...]: the first argument must be a dtype such as tx.f32 or a kind such as "
        "tx.Float; known: float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, "
        "uint32, bool, complex64, Float, Int, Num, Shaped. Fix: from typed_xmap import f32, then "
        'NamedArray[f32, "batch features"]'
    ),
    "annotation: arguments": (
        "NamedArray[...] takes a dtype and one or two spec strings; got float32. Fix: write "
        'NamedArray[f32, "batch features"], or NamedArray[f32, "batch", "n 3"] with positional dims'
    ),
    "annotation: spec not a string": (
        "NamedArray[float32, []]: the shape is given by spec strings, got list []. Fix: write NamedArray[float32, '']"
    ),
    "typed: size bound twice": (
        "typed_call.<locals>.f() parameter 'b' is NamedArray(float32[feat=5]), which does not "
        "match "
        "NamedArray[float32, 'feat']: axis 'feat' has size 5 but was bound to 4 earlier in this call. "
        "Axis bindings so far in this call: batch=8 feat=4. Fix: pass a value that fits the annotation, or "
        "correct the annotation"
    ),
    "typed: group lacks an axis": (
        "typed_group_return.<locals>.pool() return value is NamedArray(float32[embed=4, seq=3]), which does "
        "not match NamedArray[float32, '*rest embed']: group '*rest' stands for 'seq=3' here but was bound to "
        "'batch=2 seq=3' earlier in this call: the value lacks 'batch'. Axis bindings so far in this call: "
        "embed=4 *rest=(batch=2 seq=3) batch=2 seq=3. Fix: pass a value that fits the annotation, or correct "
        "the annotation"
    ),
    "typed: container element": (
        "typed_container.<locals>.f() argument ws['b'] is NamedArray(float32[emb=4]), which does not match "
        "NamedArray[float32, 'embed']: expected named axes 'embed' but the value has 'emb=4': it lacks 'embed' "
        "and carries undeclared 'emb'. Axis bindings so far in this call: embed=4. Fix: pass a value that fits "
        "the annotation, or correct the annotation"
    ),
    "typed: inside tx.vmap, the mapped axis called mapped": (
        "typed_inside_vmap.<locals>.per_example() parameter 'x' is NamedArray(float32[embed=3, other=2, batch=4], "
        "mapped: batch), which does not match NamedArray[float32, 'embed']: expected named axes 'embed' but the "
        "value has 'embed=3 other=2': it carries undeclared 'other'; 'batch' is mapped here (tx.vmap or xmap), not "
        "annotated. Axis bindings so far in this call: none. Fix: pass a value that fits the annotation, or correct "
        "the annotation"
    ),
    "typed: an xmap body naming some mapped axes": (
        "typed_xmap_body_naming_one_mapped_axis.<locals>.only_i() parameter 'v' is NamedArray(float32[i=8, j=4], "
        "mapped: i j), which does not match NamedArray[float32, 'i']: expected named axes 'i' but the value has "
        "'i=8 j=4': it carries undeclared 'j'; 'j' is mapped here (tx.vmap or xmap): annotate every mapped axis, "
        "or none. Axis bindings so far in this call: none. Fix: pass a value that fits the annotation, or correct "
        "the annotation"
    ),
    "typed: TypedDict field": (
        "typed_dict_field.<locals>.dense() argument params['b'] is NamedArray(float32[out=5]), which does not match "
        "NamedArray[float32, 'out']: axis 'out' has size 5 but was bound to 4 earlier in this call. Axis bindings so "
        "far in this call: in=3 out=4. Fix: pass a value that fits the annotation, or correct the annotation"
    ),
    "typed: TypedDict key missing": (
        "typed_dict_key.<locals>.dense() parameter 'params' is {'w': NamedArray(float32[in=3, out=4])}, which does "
        "not match Params: it has no key 'b'. Axis bindings so far in this call: in=3 out=4. Fix: pass a value that "
        "fits the annotation, or correct the annotation"
    ),
    "typed: NamedTuple scan carry field": (
        "named_tuple_scan_carry.<locals>.step() argument carry.steps is NamedArray(float32[btch=2]), which does not "
        "match NamedArray[float32, 'batch']: expected named axes 'batch' but the value has 'btch=2': it lacks "
        "'batch' and carries undeclared 'btch'. Axis bindings so far in this call: batch=2 hidden=5. Fix: pass a "
        "value that fits the annotation, or correct the annotation"
    ),
    "typed: placement": (
        "typed_placement.<locals>.f() parameter 'a' is NamedArray(float32[batch=8, feat=4]), which does not match "
        "NamedArray[float32, 'batch@x feat']: axis 'batch' is split over mesh axis 'y' but the annotation says "
        "batch@x. Axis bindings so far in this call: none. Fix: move the value with tx.constrain(..., {'batch': "
        "'x'}), or correct the annotation"
    ),
    "typed: placement whole": (
        "typed_placement_whole.<locals>.f() parameter 'a' is NamedArray(float32[batch=8, feat=4]), which does not "
        "match NamedArray[float32, 'batch feat@y']: axis 'feat' is whole (replicated) here, but the annotation "
        "declares 'feat@y'. Axis bindings so far in this call: none. Fix: move the value with tx.constrain(..., "
        "{'feat': 'y'}), or correct the annotation"
    ),
    "vmap: no axis": 'tx.vmap: no axis given. Fix: name the axis to map, e.g. tx.vmap(f, axis="batch")',
    "vmap: resources of an unmapped axis": (
        "tx.vmap: axis_resources names axis 'feat', which is not mapped (mapped: 'batch'). Fix: give resources "
        "only to the mapped axes"
    ),
    "vmap: axis not a string": (
        "tx.vmap(..., axis=3): axis names are non-empty strings, got 3. Fix: pass the axis name as a str, e.g. "
        'axis="batch"'
    ),
    "vmap: no argument carries the axis": (
        "tx.vmap(..., axis='seq'): no argument is a NamedArray carrying axis 'seq' (the arguments' named axes: "
        "batch, feat), so there is nothing to map. Fix: map an axis an argument carries, or name it first with "
        "tx.named(array, axes)"
    ),
    "vmap: sizes disagree": (
        "tx.vmap(..., axis='batch'): axis 'batch' has size 8 in args[0] but 3 in args[1]. Fix: give every "
        "argument the same 'batch' size"
    ),
    "scan: leaf lacks the axis": (
        "tx.scan(..., axis='layers'): xs['b'] is a positional array, without the scanned axis 'layers'; every "
        "leaf of xs is sliced along it. Fix: give xs['b'] the axis 'layers' (tx.named), or pass it to the body "
        "through its closure or the carry instead"
    ),
    "scan: carry loses an axis": (
        "tx.scan(..., axis='layers'): the carry loses 'batch' in one step (in: [batch=2, embed=4], out: "
        "[embed=4]). Fix: keep the carry's named shape from step to step (reduce or broadcast it back)"
    ),
    "scan: carry changes size": (
        "tx.scan(..., axis='layers'): axis 'batch' of the carry has size 2 going in but 3 coming out. Fix: keep "
        "the carry's named shape [batch=2, embed=4] from step to step"
    ),
    "scan: carry becomes positional": (
        "tx.scan(..., axis='layers'): the carry goes in as a NamedArray [batch=2, embed=4] but comes out as a "
        "positional array. Fix: return the carry with the kind of value it came in as"
    ),
    "scan: carry structure": (
        "tx.scan(..., axis='layers'): the body returns a carry of structure PyTreeDef((*, *)), but init has "
        "structure PyTreeDef(*). Fix: return the carry with the structure of init"
    ),
    "vmap: axis listed twice": (
        "tx.vmap(..., axis=('batch', 'batch')): axis 'batch' is listed twice; an axis is mapped once, and mapping "
        "it again would map a dim it no longer has. Fix: list each axis once, e.g. axis=('batch',)"
    ),
    "scan: length disagrees": (
        "tx.scan(..., axis='layers'): length=7, but the scanned axis 'layers' has size 3 in xs. Fix: drop length= "
        "(the size of 'layers' sets it), or pass length=3"
    ),
    "scan: length not an int": (
        "tx.scan(..., axis='layers'): length=2.5; a scan's length is a non-negative int. Fix: drop length= (the "
        "size of 'layers' in xs sets it), or pass an int"
    ),
    "scan: no leaves, no length": (
        "tx.scan(..., axis='layers'): xs has no leaves, so nothing says how many steps to run. Fix: pass length=, "
        "or give xs a NamedArray with axis 'layers'"
    ),
    "scan: body returns one value": (
        "tx.scan(..., axis='layers'): the body returns an array, not a pair (carry, ys). Fix: return "
        "(new_carry, ys), or (new_carry, None) when there is nothing to stack"
    ),
    "scan: carry changes dtype": (
        "tx.scan(..., axis='layers'): the carry goes in as float32 but comes out as int32; a carry keeps its dtype "
        "from step to step. Fix: cast it back in the body (.astype(jnp.float32)), or start init as int32"
    ),
    "scan: carry changes placement": (
        "tx.scan(..., axis='layers'): axis 'batch' of the carry goes in unsplit but comes out split over 'x'; on "
        "an Explicit mesh a carry keeps its placement from step to step. Fix: place init as the body places its "
        "result (tx.shard(init, {'batch': 'x'})), or tx.constrain the new carry back to init's placement"
    ),
    "scan: positional carry changes placement": (
        "tx.scan(..., axis='layers'): dim 0 of the positional carry[0] goes in unsplit but comes out split over "
        "'x'; on an Explicit mesh a carry keeps its placement from step to step. Fix: place init[0] as the body "
        "places its result (jax.sharding.reshard(init[0], P('x', None))), or jax.sharding.reshard the new carry "
        "back to init's placement, P(None, None)"
    ),
    "indexing: positional int out of bounds": (
        "x[5]: index 5 is out of bounds for positional dim 0 of size 2. Fix: use an index in [-2, 2), as numpy does"
    ),
    "constructors: size": (
        "tnp.causal_mask: size=-1; a size is a non-negative int (not a bool or a float). Fix: pass the axis's "
        "length as an int, e.g. size=8"
    ),
    "constructors: float tokens": (
        "tnp.one_hot: tokens have dtype float32, but one-hot vectors are made from integer ids (a float32 id "
        "would match no position and give zeros). Fix: tokens.astype(jnp.int32)"
    ),
    "structure: broadcast to a negative size": (
        "tx.broadcast_to: the size of axis 'k' is -1; sizes are non-negative ints. Fix: give its length, e.g. {'k': 8}"
    ),
    "structure: arange step 0": (
        "tnp.arange: step is 0; a range needs a nonzero step. Fix: pass step=1 (or any nonzero step)"
    ),
    "spec: size beyond any array dim": (
        "invalid spec 'a=999999999999999999999999999999': the size of axis 'a' has 30 digits, more than any "
        "array dim can hold (at most 9223372036854775807)\n"
        "    a=999999999999999999999999999999\n"
        "      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "fix: write the real size, or just a"
    ),
    "operators: operands on meshes of two kinds": (
        "`x + y`: the operands live on different meshes: the left operand on mesh(x=4 Explicit, y=2 Explicit), "
        "the right operand on mesh(x=4 Auto, y=2 Auto). Fix: place them on one mesh (tx.shard each under one "
        "jax.set_mesh), or move one over with jax.device_put"
    ),
    "resources_of: Auto axes under jit": (
        "tx.resources_of: inside jit, a value on Auto mesh axes (x, y) is placed by the compiler, so its "
        "placement is not part of its type while tracing. Fix: call tx.resources_of outside jit, or use a mesh "
        "with Explicit axes (jax.make_mesh's default), whose placement a traced value carries"
    ),
    "random: not a key": (
        "tx.random.normal: key is int 3, not a PRNG key. Fix: pass jax.random.key(0) (jax.random.split it for "
        "more keys)"
    ),
    "named: already named": ("axes = ['batch']: the value already has named axis 'batch'. Fix: pick a new name"),
    "positional: not a NamedArray": (
        "tx.positional takes a NamedArray, got ArrayImpl. Fix: tx.named(array, axes) first; a "
        "positional array needs no conversion"
    ),
    "positional: unlisted axis": (
        "axes = ['batch', ...] does not list axis 'feat', which the value NamedArray(float32[batch=8, "
        "feat=4]) carries. Fix: list every named axis, e.g. ['batch', 'feat', ...]"
    ),
    "positional: lacking axis": (
        "axes = ['batch', 'feat', 'out', ...] lists axis 'out', but the value "
        "NamedArray(float32[batch=8, feat=4]) does not carry it, so its size is unknown. Fix: drop it "
        "from the spec, or broadcast x first"
    ),
    "positional: too few positional dims": (
        "axes = {2: 'batch', 3: 'feat'} requires the value to have at least 2 positional dims, but "
        "NamedArray(float32[batch=8, feat=4]) has 0. Fix: put the named axes at lower dims"
    ),
    "positional: rank": (
        "axes = ['batch', 'feat']: a list spec without '...' asserts rank 2, but the result has rank 3. "
        "Fix: end the list with ... to allow more dims"
    ),
    "shard: no mesh": (
        "tx.shard needs a device mesh, but none is set. Fix: mesh = jax.make_mesh((4, 2), ('x', 'y')); "
        "then jax.set_mesh(mesh), or `with jax.set_mesh(mesh): ...`"
    ),
    "shard: serial loop": (
        "tx.shard: axis_resources['batch'] is a SerialLoop; serial loops only exist inside xmap. Fix: "
        "assign mesh axes here"
    ),
    "shard: unknown mesh axis": (
        "tx.shard: axis_resources['batch'] names mesh axis 'z', but the current mesh has axes 'x', 'y'. "
        "Fix: use one of those, or set another mesh"
    ),
    "shard: axes= with a NamedArray": ("tx.shard: x is a NamedArray, it carries its axes. Fix: drop axes="),
    "shard: positional array without axes=": (
        "tx.shard: x is a positional array, so say which dims are which axes. Fix: tx.shard(x, "
        "axis_resources, axes=['batch', ...])"
    ),
    "shard: memory kind": (
        "tx.shard: memory_kind='tape' is not a memory of this mesh's devices (device, pinned_host, "
        "unpinned_host). Fix: use one of those"
    ),
    "shard: inside jit": (
        "tx.shard is called inside jax.jit (or another JAX transformation), where it cannot put a value on "
        "devices. Fix: inside a jitted function use tx.constrain(x, {'batch': 'x'}); call tx.shard outside "
        "jax.jit, on the arguments you pass in"
    ),
    "resources_of: not a NamedArray": (
        "tx.resources_of takes a NamedArray, got ArrayImpl. Fix: tx.named(array, axes) first, or read array.sharding"
    ),
    "visualize: not a NamedArray": (
        "tx.visualize takes a NamedArray, got ArrayImpl. Fix: tx.visualize(tx.named(array, axes)), or "
        "jax.debug.visualize_array_sharding(array) for a positional array"
    ),
    "visualize: a tracer": (
        "tx.visualize needs a concrete array, not a tracer. Fix: call it outside jax.jit, on the "
        "result, or use tx.resources_of(x) inside"
    ),
    "axis map: name not a string": (
        "axes = [3]: axis names must be strings, got 3 at dim 0. Fix: name the axis with a string"
    ),
    "axis map: name not an identifier": (
        "axes = ['2x']: axis names are Python identifiers (as in NamedArray annotations), got '2x' at dim 0. "
        "Fix: name the axis with an identifier, e.g. 'batch'"
    ),
    "axis map: rank": (
        "in_axes (for args[0]) = ['a']: a list spec without '...' asserts rank 1, but the value has rank 2 "
        "(shape (4, 3)). Fix: end the list with ... to allow more dims"
    ),
    "axis map: dim beyond the rank": (
        "axes = {2: 'batch'} names dim 2, so the value needs at least 3 positional dims, but it has rank 1 "
        "(shape (3,)). Fix: name dims the value has"
    ),
    "axis map: not a list or dict": (
        "axes = 'batch': a spec is a list of axis names (optionally ending in ...), like ['batch', ...], or "
        "a dict from positional dims to names, like {0: 'batch'}; got str. Fix: for a whole argument without "
        "named axes, use {}"
    ),
    "axis map: dim maps to None": (
        "axes = {0: None}: dim 0 maps to None; in a dict spec every entry names an axis. Fix: leave dim 0 "
        "out of the dict (unnamed dims stay positional)"
    ),
    "axis map: name twice": (
        "axes = ['a', 'a']: axis 'a' is named twice (dims 0 and 1); names must be unique within one spec. "
        "Fix: give each dim its own name"
    ),
    "axis map: key not an int": (
        "axes = {'0': 'a'}: dict specs map positional dims (ints) to names, but key '0' is not an int. Fix: "
        "write {0: 'batch'}, or a list ['batch', ...]"
    ),
    "axis map: negative dim": (
        "axes = {-1: 'a'}: negative dim -1 for axis 'a'; xmap specs count dims from the front. Fix: use a "
        "non-negative position"
    ),
    "axis map: ... not last": ("axes = [..., 'a']: '...' may only end a list spec. Fix: move it to the end"),
    "out axes: output carries an unlisted axis": (
        "the output (out_axes = ['a', ...]) of identity carries named axis 'b', which its out_axes do not "
        "list; an output must list every named axis it carries. Fix: list it, e.g. out_axes ['a', 'b', ...], "
        "or reduce it in the body (jax.lax.psum(y, 'b') or jnp.sum(y, axis='b'))"
    ),
    "out axes: annotated return not listed": (
        "xmap(body): body returns named axes 'batch feat' but out_axes ['batch', ...] does not list 'feat'; "
        "an output must list every named axis it carries. Fix: add them to out_axes, or reduce them in body"
    ),
    "reduce: name twice": (
        "tnp.sum(x, axis=('batch', 'batch')): an axis name is listed twice in ('batch', 'batch'). Fix: list "
        "each axis once"
    ),
    "reduce: dim twice": ("tnp.sum(x, axis=(0, -2)): positional axis [0, -2] repeats a dim. Fix: list each dim once"),
    "reduce: argmax over two axes": (
        "tnp.argmax(x, axis=('batch', 'feat')): argmax reduces over one axis, got 2. Fix: pass a single name or int"
    ),
    "reduce: dim out of range": (
        "tnp.sum(x, axis=0): positional axis 0 is out of range for a value with 0 positional dims (shape "
        "()); named axes are reduced by name, not by position. Fix: use an int in [0, 0) or the axis name"
    ),
    "reduce: bool axis": (
        "tnp.sum(x, axis=True): an axis is a name or an int, got True. Fix: pass a name, an int, or a tuple of them"
    ),
    "reduce: float axis": (
        "tnp.sum(x, axis=1.5): an axis is a name (str) or a positional dim (int), got 1.5. Fix: pass a name, "
        "an int, or a tuple of them"
    ),
    "resources: two axes on one mesh axis": (
        "axes 'a' and 'b' are both assigned to mesh axis 'x', but they meet in argument args[0] (in_axes = "
        "['a', 'b', ...]) of identity: one value cannot be split over one mesh axis along two of its axes. "
        "Fix: assign 'b' to another mesh axis, or keep the two axes in separate values (reduce one of them "
        "first)"
    ),
    "resources: two axes on one serial loop": (
        "axes 'a' and 'b' are both assigned the serial loop 'l', but a loop steps through the chunks of one "
        "axis: two axes on one loop resource conflict. Fix: give 'b' its own loop or a mesh axis, or nest "
        "two xmaps"
    ),
    "placement: two axes on one mesh axis in a result": (
        "axes 'batch' and 'heads' are both assigned to mesh axis 'x', but they meet in the result of x * y (a "
        "value with axes 'batch@x heads@x'): one value cannot be split over one mesh axis along two of its axes. "
        "Fix: assign 'heads' to another mesh axis, or keep the two axes in separate values (reduce one of them "
        "first)"
    ),
    "placement: a contraction's result on an Explicit mesh": (
        "axes 'seq' and 'mlp' are both assigned to mesh axis 'y', but they meet in the result of "
        "tnp.einsum('{batch,seq,embed},{embed,mlp}->{batch,seq,mlp}') (a value with axes 'batch seq@y mlp@y'): "
        "one value cannot be split over one mesh axis along two of its axes. Fix: assign 'mlp' to another mesh "
        "axis, or keep the two axes in separate values (reduce one of them first)"
    ),
    "placement: a dot's result on an Explicit mesh": (
        "axes 'seq' and 'mlp' are both assigned to mesh axis 'y', but they meet in the result of "
        "tnp.dot(x, y, axis='embed') (a value with axes 'batch seq@y mlp@y'): one value cannot be split over one "
        "mesh axis along two of its axes. Fix: assign 'mlp' to another mesh axis, or keep the two axes in "
        "separate values (reduce one of them first)"
    ),
    "placement: known placement against a declared one": (
        "the return value of f is placed other than its annotation says: axis 'batch' is split over mesh axis 'y' "
        "but the annotation says batch@x. Fix: move the value with tx.constrain(..., {'batch': 'x', 'feat': 'y'}), "
        "or correct the annotation"
    ),
    "placement: a declared mesh axis the value splits along another axis": (
        "the return value of f is placed other than its annotation says: axis 'seq' is split over mesh axis 'y', "
        "which the annotation gives to 'embed' (embed@y). Fix: move the value with tx.constrain(..., {'embed': "
        "'y'}), or correct the annotation"
    ),
    "placement: a known-whole value where a split is declared": (
        "argument 'w' of readout is placed other than its annotation says: axis 'hidden' is whole (replicated) "
        "here, but the annotation declares 'hidden@model'. Fix: move the value with tx.constrain(..., {'hidden': "
        "'model'}), or correct the annotation"
    ),
    "placement: a split value where whole is declared": (
        "the return value of f is placed other than its annotation says: axis 'batch' is split over mesh axis "
        "'data', but the annotation declares it whole ('batch@()'). Fix: move the value with tx.constrain(..., "
        "{'batch': None}), or correct the annotation"
    ),
    "resources: not a dict": (
        "axis_resources must be a dict from axis names to mesh axes, got list. Fix: write axis_resources={'batch': 'x'}"
    ),
    "resources: serial loop length": (
        "SerialLoop length must be a positive int, got 0. Fix: give the number of loop steps, e.g. SerialLoop(4)"
    ),
    "resources: no resource": (
        "axis_resources['a'] = () assigns no resource. Fix: leave 'a' out of axis_resources (it is then not "
        "split), or name a mesh axis: axis_resources={'a': 'x'}"
    ),
    "resources: mesh axis twice": (
        "axis_resources['a'] = ('x', 'x'): a single axis must be assigned a tuple of distinct resources. "
        "Fix: list each mesh axis once"
    ),
    "resources: empty axis": (
        "axis 'a' has size 0 and is assigned to mesh axis 'x': JAX cannot split an empty axis over devices "
        "(the result could not be read back). Fix: drop 'a' from axis_resources for empty inputs, or skip "
        "the call when 'a' is empty"
    ),
    "resources: not divisible": (
        "axis 'a' has (global) size 6, which is not divisible by the 4 parts of its resources mesh axis 'x' "
        "(4). Fix: pad 'a' to a multiple of 4, or assign it fewer resources"
    ),
    "resources: not a resource": (
        "axis_resources['a'] = 3: a resource is a mesh axis name, a SerialLoop or a tuple of them. Fix: "
        "write axis_resources={'a': 'x'}"
    ),
    "mapped: unbound axis": (
        "tnp.mean(x, axis='i'): axis 'i' is not bound by any enclosing xmap/vmap. Outside a NamedArray, a "
        "named axis is an xmap (or jax.vmap(..., axis_name='i')) level around the code. Fix: call this "
        "inside an xmap that maps 'i', or pass a NamedArray that carries 'i' (tx.named(array, axes))"
    ),
    "named array: a dim and mapped": (
        "axis 'a' cannot be both a dim of the data and mapped. Fix: list it in axes or in mapped, not both"
    ),
    "named array: vmap over a named axis": (
        "a NamedArray with named axes ('batch', 'feat') needs at least 2 dims, but its data has shape (4,). "
        "This happens when jax.vmap maps a named axis: vmap maps positional dims only. Fix: map a positional "
        "dim, or use tx.xmap to map a named axis"
    ),
    "named array: two dims one name": (
        "a NamedArray cannot name two dims the same: ('a', 'a'). Fix: give each dim its own name"
    ),
    "named array: a subclass with __init__": (
        "class Tagged(NamedArray) defines __init__, but a NamedArray is made by its checks alone (NamedArray has "
        "no __init__ to extend). Fix: drop Tagged.__init__ and keep extra data beside the value (a dataclass or "
        "an equinox Module holding the NamedArray)"
    ),
    "named array: an unreadable pickle": (
        "this pickle holds a NamedArray state typed_xmap cannot read (list, not the (None, {'data': ..., 'axes': "
        "..., 'mapped': ...}) slots of an older version). Fix: pickle the value again with this version, or pickle "
        "tx.positional(x, axes) and rebuild it with tx.named(array, axes)"
    ),
    "named array: truth value": (
        "the truth value of NamedArray(float32[batch=8, feat=4]) is ambiguous: it has named axes. Fix: "
        "reduce them first, e.g. tnp.all(x, ('batch', 'feat'))"
    ),
    "named array: float of named axes": (
        "float() of NamedArray(float32[batch=8, feat=4]) is ambiguous: it has named axes. Fix: reduce them first, "
        "e.g. tnp.sum(x, ('batch', 'feat'))"
    ),
    "named array: jax.grad of a NamedArray": (
        "jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this one "
        "returned NamedArray(float32[]). Fix: return tx.positional(loss, []) (a NamedArray with no named axes as "
        "a positional scalar)"
    ),
    "named array: jax.grad with named axes left": (
        "jax.grad (and value_and_grad) differentiates a function that returns a positional scalar, and this one "
        "returned NamedArray(float32[feat=4]), which still has named axes ('feat',). Fix: reduce them "
        "(tnp.sum(loss, ('feat',))), then return tx.positional(loss, [])"
    ),
    "named array: JAX takes it for an array": (
        "JAX took NamedArray(float32[batch=8, feat=4]) for a positional array (a jax.lax function, or a JAX "
        "function that reads its argument's shape and dtype) and would drop its named axes. Fix: pass "
        "tx.positional(x, ['batch', 'feat', ...]) for a positional array, or use a typed_xmap.numpy function"
    ),
    "xmap: no out_axes": (
        "xmap needs out_axes: which named axes each output carries, and where. Fix: xmap(f, in_axes=..., "
        "out_axes=['batch', ...])"
    ),
    "xmap: empty out_axes": (
        "out_axes=() for identity: an xmapped function must return something. Fix: give one spec per output"
    ),
    "xmap: out_axes dim beyond the result": (
        "the output (out_axes = {2: 'a'}) puts axis 'a' at dim 2, which needs at least 2 positional dims per "
        "element, but the result has 0 (shape ()). Fix: use lower positions in out_axes"
    ),
    "xmap: output rank": (
        "the output (out_axes = ['a']): a list spec without '...' asserts rank 1, but the output has rank 2 "
        "(1 positional dims per element, shape (3,), plus 1 named). Fix: end the list with ... to allow more "
        "dims"
    ),
    "xmap: output carries a foreign axis": (
        "the output (out_axes = ['a', ...]): the returned NamedArray(float32[z=3]) carries axis 'z', which "
        "is not an axis of this xmap; outputs carry only xmap axes. Fix: reduce 'z' first (tnp.sum(x, 'z')), "
        "or convert it to a positional dim with tx.positional"
    ),
    "xmap: another mesh inside": (
        "xmap of identity runs inside another xmap but sees a different mesh; changing the physical mesh is "
        "not allowed inside xmap. Fix: set the mesh once, around the outer call"
    ),
    "xmap: undefined axis": (
        "out_axes names axis 'b', which neither in_axes (or the NamedArray arguments) nor axis_sizes "
        "defines. Fix: map it in in_axes, or give its size in axis_sizes"
    ),
    "xmap: nested xmap reuses an axis": (
        "xmap of identity reuses axis 'a', which an enclosing xmap already maps; an inner xmap may use outer "
        "axes in collectives but not define them again. Fix: rename the inner axis (e.g. 'a' -> 'a_inner')"
    ),
    "xmap: resource without a mesh": (
        "axis_resources['a'] = 'x', but no device mesh is set, so mesh axis 'x' is not in scope. Fix: mesh = "
        "jax.make_mesh((4, 2), ('x', 'y')); call the xmapped function under `with jax.set_mesh(mesh):`, or "
        "use serial_loop('x', n)"
    ),
    "xmap: unknown mesh axis": (
        "axis_resources['a'] = 'z', but the current mesh has axes 'x', 'y' and no serial_loop('z', n) is "
        "active. Fix: use one of the mesh axes, or set a mesh that has 'z'"
    ),
    "xmap: axis_sizes not a dict": (
        "axis_sizes must be a dict from axis names to sizes, got list [('a', 8)]. Fix: write axis_sizes={'batch': 8}"
    ),
    "xmap: negative size": (
        "axis_sizes['a'] = -1: sizes are non-negative ints. Fix: give the axis's length, e.g. axis_sizes={'a': 8}"
    ),
    "xmap: donate_argnums type": (
        "donate_argnums='0' for identity: donate_argnums is an argument index or a tuple of them. Fix: write "
        "donate_argnums=0 or donate_argnums=(0, 2)"
    ),
    "xmap: donate_argnums out of range": (
        "donate_argnums=3 for identity, which takes 1 positional argument(s): there is no argument 3. Fix: "
        "donate existing arguments, by index 0"
    ),
    "xmap: donated argument not given": (
        "donate_argnums=(1,) for <lambda>, but it was called with 1 argument(s): there is no argument 1. "
        "Fix: pass that argument, or donate only the arguments given"
    ),
    "xmap: broadcast output conflicts": (
        "the output (out_axes = ['i']) of identity is broadcast along axis 'i', which is assigned to mesh "
        "axis 'x', but the output is already partitioned along 'x' because it carries axis 'j'. Fix: drop "
        "'i' from its out_axes, or assign 'i' to another mesh axis"
    ),
    "xmap: multi-process without a mesh": (
        "xmap in a multi-process run needs a device mesh spanning the processes. Fix: mesh = "
        "jax.make_mesh(...); call the xmapped function under `with jax.set_mesh(mesh):`"
    ),
    "xmap: unbound collective axis": (
        "a collective in <lambda> uses axis 'z', which no enclosing xmap or vmap binds (axes in scope: 'a'). "
        "Fix: use one of those names, or map 'z' with an enclosing xmap (in_axes or axis_sizes)"
    ),
    "xmap: collective over a serial loop": (
        "axis 'a' is assigned the serial loop SerialLoop(2), so it cannot be referenced inside the xmapped "
        "function (collectives, axis_index) by name. Fix: assign 'a' to a mesh axis, or loop over an axis "
        "that the body does not name"
    ),
    "xmap: permute over two axes": (
        "a lax.ppermute/pshuffle in body at FILE:LINE (permute_over_two_axes.<locals>.body) permutes over "
        "axes 'i', 'j' together, which xmap's vmap levels cannot do (each level permutes one axis). Fix: "
        "permute over one axis at a time (one ppermute per axis, when the permutation factors), or merge the "
        "axes into one named axis before the xmap and permute over it"
    ),
    "xmap: committed to other devices": (
        "xmap of identity: args[0] is a jax.Array placed on devices [0], but the call runs on the current "
        "mesh's 8 devices; xmap does not move committed arrays between devices implicitly. Fix: create it "
        "under the same mesh, or move it first: jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.P()))"
    ),
    "xmap: not an array": (
        "xmap of identity: args[0] is a str ('abc'), not an array. Fix: pass arrays or numbers "
        "(jnp.asarray(...)); close over other values in the function instead of passing them"
    ),
    "xmap: size not inferable": (
        "cannot infer the size of axis 'i': no argument maps it (empty containers?). Fix: give its size with "
        "axis_sizes={'i': SIZE}"
    ),
    "xmap: None spec": (
        "in_axes is None, which xmap does not accept as a spec. Fix: write {} for a value without named axes"
    ),
    "xmap: not a tree prefix": (
        "in_axes must be a tree prefix of the argument tuple, but in_axes has structure PyTreeDef((*, *)) "
        "and the value PyTreeDef((*,)) (Tuple arity mismatch: 1 != 2; tuple: (JitTracer(float32[8]),).). "
        "Fix: give one spec per argument, e.g. in_axes=(['batch', ...], {}), or one spec for all of them"
    ),
    "xmap: no in_axes, positional argument": (
        "xmap was called without in_axes, so every argument must be a NamedArray, but args[0] is a "
        "positional array of shape (8,). Fix: pass in_axes=..., or name it with tx.named(array, axes)"
    ),
    "xmap: in_axes names a carried axis": (
        "in_axes = ['batch', ...] names axis 'batch' for args[0], a NamedArray that already carries it. Fix: "
        "drop 'batch' from in_axes; a NamedArray's own axes are mapped by name"
    ),
    "xmap: sizes disagree": (
        "axis 'a' has size 8 from args[0] (in_axes[0] = ['a', ...]), dim 0, but size 4 in args[1] "
        "(in_axes[1] = ['a', ...]), dim 0 (shape (4,)). One axis has one size in an xmap call. Fix: make the "
        "sizes agree, or give the two axes different names"
    ),
    # _algebra/_structure.py
    "structure: not an axis name": (
        "tnp.stack(xs, axis='2nd'): the new axis must be an axis name (an identifier), got '2nd'. Fix: pass a "
        "name such as 'seq'"
    ),
    "structure: rename a missing axis": (
        "tx.rename names axis 'seq', but x has named axes 'batch=8 feat=4'. Fix: name an axis the value has, or "
        "check the axis name's spelling"
    ),
    "structure: new axis exists": (
        "tnp.one_hot: tokens already has an axis 'feat'; a new axis needs a name of its own. Fix: pick another "
        "name, or tx.rename(x, {'feat': ...}) first"
    ),
    "structure: shape not a dict": (
        "tnp.zeros: a named shape is a dict from axis names to sizes, got list [2, 3]. Fix: write {'batch': 2, "
        "'embed': 3}"
    ),
    "structure: renames not a dict": (
        "tx.rename: renames are a dict from old axis names to new ones, got 'batch'. Fix: write {'seq': 'kv_seq'}"
    ),
    "structure: no operands": (
        "tnp.concatenate(xs, axis='seq'): needs at least one operand, got none. Fix: pass a non-empty list of "
        "NamedArrays"
    ),
    "structure: bad sections": (
        "tnp.split(x, axis='batch', sections='2'): sections is an int (equal parts) or a list of sizes, got '2'. "
        "Fix: write sections=2 or sections=[3, 5]"
    ),
    "structure: sections do not add up": (
        "tnp.split(x, axis='batch', sections=[3, 4]): the sizes [3, 4] add up to 7, but axis 'batch' has size 8. "
        "Fix: give sizes that add up to 8"
    ),
    "structure: merge axes not a tuple": (
        "tx.merge_axes: axes is a tuple of the axis names to merge, got 'batch'. Fix: write ('heads', 'head_dim')"
    ),
    "structure: merge an axis twice": (
        "tx.merge_axes: an axis is listed twice in ('batch', 'batch'). Fix: list each axis once"
    ),
    "structure: split into nothing": (
        "tx.split_axis: parts is empty; axis 'feat' must split into at least one axis. Fix: write {'heads': 4, "
        "'head_dim': 8}"
    ),
    "structure: split sizes": (
        "tx.split_axis: axis 'feat' has size 4, but the parts {'heads': 3, 'head_dim': 2} multiply to 6. Fix: "
        "give parts whose sizes multiply to 4"
    ),
    "structure: pad widths not a dict": (
        "tnp.pad: pad widths are a dict from axis names to (before, after), got [(1, 0)]. Fix: write {'seq': (1, 0)}"
    ),
    "structure: mask over one axis": (
        "tnp.causal_mask: the row and column axes are both 'seq'; a mask over two axes needs two names. Fix: "
        "name them apart, e.g. 'q_seq' and 'k_seq'"
    ),
    "structure: negative size": (
        "tnp.ones: the size of axis 'batch' is -2; sizes are non-negative ints. Fix: give its length, e.g. {'batch': 8}"
    ),
    "structure: rename clash": (
        "tx.rename: renaming 'batch' to 'feat' clashes with axis 'feat', which is (or becomes) 'feat' too. Fix: "
        "pick a name the value does not have, or rename 'feat' as well"
    ),
    "structure: operands' axes differ": (
        "tnp.stack(xs, axis='layers'): operand 0 has axis 'feat' but operand 1 does not; every operand needs the "
        "same named axes. Fix: tx.broadcast_to the operands to one shape first"
    ),
    "structure: unequal parts": (
        "tnp.split(x, axis='feat', sections=3): axis 'feat' has size 4, which does not split into 3 equal parts. "
        "Fix: pass a number of parts that divides 4, or a list of sizes"
    ),
    "structure: broadcast drops an axis": (
        "tx.broadcast_to: x has axis 'feat', which the target shape {'batch': 8} lacks; broadcasting adds axes, "
        "never drops them. Fix: add 'feat' to the target, or reduce it first"
    ),
    "structure: broadcast size": (
        "tx.broadcast_to: axis 'feat' has size 4 in x but 5 in the target shape. Fix: make the sizes agree"
    ),
    "structure: pad width": (
        "tnp.pad: the pad width of 'feat' is 1; it is (before, after), two non-negative ints. Fix: write "
        "{'feat': (1, 0)}"
    ),
    "structure: concatenate sizes": (
        "tnp.concatenate(xs, axis='feat'): axis 'batch' has size 8 in operand 0 but 4 in operand 1. Fix: make "
        "the sizes of 'batch' agree"
    ),
    "structure: positional dims differ": (
        "tnp.concatenate(xs, axis='feat'): operand 0 has positional dims () but operand 1 has (3,); stacked or "
        "joined values need the same positional dims. Fix: name the dims that differ, or reshape the operands "
        "alike"
    ),
    "structure: not a NamedArray": (
        "tnp.cumsum: x is not a NamedArray (got ArrayImpl), so it has no named axes to work on (inside xmap a "
        "named axis is an enclosing level, not a dim of the per-element value). Fix: tx.named(array, axes) "
        "first, or use jax.numpy on positional dims"
    ),
    "windows: spatial not a dict": (
        "tnp.conv: spatial maps each spatial axis of x to the kernel axis carrying its window, got ['height']. "
        "Fix: write spatial={'height': 'kh', 'width': 'kw'}"
    ),
    "windows: contract not names": (
        "tnp.conv: contract is an axis name or a tuple of names, got 3. Fix: write contract='channels' or "
        "contract=('channels',)"
    ),
    "windows: contracted size clash": (
        "tnp.conv: contracted axis 'channels' has size 3 in x but 4 in kernel. Fix: give 'channels' one size in "
        "both, or contract another axis"
    ),
    "windows: groups do not divide the outputs": (
        "tnp.conv: feature_group_count=3 does not divide the kernel's output axes ('out',) (together 4). Fix: make"
        " the output features a multiple of 3"
    ),
    "windows: output axis clashes": (
        "tnp.conv: kernel axis 'batch' becomes an output axis, but x has an axis 'batch' too. Fix: rename one of "
        "them (tx.rename), or list it in contract="
    ),
    "windows: stride of another axis": (
        "tnp.conv: strides names axis 'depth', which is not a spatial axis; the spatial axes are ('height', "
        "'width'). Fix: key strides by a spatial axis, or give one value for all"
    ),
    "windows: stride not positive": ("tnp.conv: strides is 0; it must be a positive int. Fix: pass e.g. 1 or 2"),
    "windows: bad padding": (
        "tnp.conv: padding is 'FULL'; padding is 'VALID', 'SAME', an int or a (low, high) pair of non-negative "
        "ints. Fix: write padding='SAME' or padding={'height': (1, 1)}"
    ),
    "windows: window longer than the axis": (
        "tnp.max_pool: axis 'width' has size 5 (6 padded), shorter than its window of 9. Fix: pad it "
        "(padding='SAME'), or use a smaller window or dilation"
    ),
    "windows: transposed input shorter than its window": (
        "tnp.conv_transpose: axis 'height' has size 2 (spread to 3 by stride 2), shorter than its window of 5. "
        "Fix: pad it (padding='SAME'), or use a smaller window or dilation"
    ),
    "windows: window not a dict": (
        "tnp.avg_pool: window maps axis names to window sizes, got 2. Fix: write window={'height': 2, 'width': 2}"
    ),
    "windows: pooled size of a split axis the mesh axis does not divide": (
        "tnp.max_pool: axis 'height' (size 6) is split over mesh axis 'y' in 2 parts, and pools to size 5, which 2 "
        "does not divide: on an Explicit mesh a pooled axis stays split, so its pooled size must divide into the "
        "parts. Fix: choose a window, strides or padding whose pooled size of 'height' is a multiple of 2, or make "
        "'height' whole first (tx.constrain with a mapping without 'height')"
    ),
    "windows: positional kernel dims": (
        "tnp.conv: kernel has 1 positional dims; a kernel's dims are all named (windows, contracted and output "
        "axes). Fix: tx.named(kernel, ...) names every dim"
    ),
    "windows: a level changes length": (
        "tnp.max_pool: axis 'height' is an enclosing xmap level of size 6, but the window makes it 3; a level keeps "
        "its size. Fix: use padding='SAME' and stride 1 here, or pass NamedArrays (tx.named) to change the length"
    ),
    "selection: k not positive": (
        "tnp.top_k(x, 0, axis='channels', new_axis='choice'): k is 0; it must be a positive int. Fix: pass how "
        "many to keep, e.g. k=2"
    ),
    "selection: k too large": (
        "tnp.top_k(x, 4, axis='channels', new_axis='choice'): k=4 is larger than axis 'channels' (size 3). Fix: "
        "keep at most 3"
    ),
    "segments: num_segments": (
        "tnp.segment_sum(data, segment_ids, 0, axis='edge', new_axis='node'): num_segments is 0; it must be a "
        "positive int. Fix: pass how many segments there are, e.g. num_segments=nodes"
    ),
    "segments: ids without the axis": (
        "tnp.segment_sum(data, segment_ids, 3, axis='edge', new_axis='node'): "
        "segment_ids has named axes 'node=6'; it must carry "
        "the axis 'edge' it segments, and no other. Fix: give one segment id per element of 'edge', e.g. "
        "tx.named(ids, ['edge'])"
    ),
    "segments: ids of another size": (
        "tnp.segment_sum(data, segment_ids, 3, axis='edge', new_axis='node'): "
        "segment_ids has 5 elements along 'edge' but data "
        "has 6. Fix: give one segment id per element of 'edge'"
    ),
    "segments: ids with positional dims": (
        "tnp.segment_sum(data, segment_ids, 3, axis='edge', new_axis='node'): "
        "segment_ids has positional dims (2,); it must carry "
        "only the axis 'edge'. Fix: name or index away the other dims"
    ),
    "segments: ids not 1-d": (
        "tnp.segment_sum(data, segment_ids, 3, axis='edge', new_axis='node'): "
        "segment_ids is an array of shape (6, 2); it must be "
        "1-d along 'edge'. Fix: pass one id per element of 'edge', or tx.named(ids, ['edge'])"
    ),
    "segments: float ids": (
        "tnp.segment_max(data, segment_ids, 3, axis='edge', new_axis='node'): segment_ids has dtype float32; "
        "segment ids are integers. Fix: pass int32 ids (ids.astype(jnp.int32))"
    ),
    "selection: sort along a missing axis": (
        "tnp.sort names axis 'depth', but x has named axes 'batch=2 channels=3 height=6 width=5'. Fix: name an "
        "axis the value has, or check the axis name's spelling"
    ),
    "selection: sample along a missing axis": (
        "tx.random.categorical names axis 'vocab', but logits has named axes 'batch=2 channels=3 height=6 "
        "width=5'. Fix: name an axis the value has, or check the axis name's spelling"
    ),
    "selection: new axis exists": (
        "tnp.zeros_like: x already has an axis 'batch'; a new axis needs a name of its own. Fix: pick another "
        "name, or tx.rename(x, {'batch': ...}) first"
    ),
    "fitting_mesh: shape and names differ": (
        "tx.fitting_mesh takes one size of at least 1 per mesh axis name, got shape (4, 2) for names ('x',). "
        "Fix: tx.fitting_mesh((4, 2), ('x', 'y')): as many sizes as names"
    ),
    "moe: no token axes": (
        "tx.moe_route: tokens=(); tokens names the axes whose tokens share an expert's capacity (at least one). "
        "Fix: tokens='seq', or tokens=('seq', 'patch')"
    ),
    "moe: a token axis twice": (
        "tx.moe_route: tokens=('seq', 'seq') with expert='expert' names an axis twice. Fix: list each token axis "
        "once, and never the expert axis"
    ),
    "moe: k out of range": (
        "tx.moe_route: k=5; each token picks k of the 3 experts, so k is an int from 1 to 3. Fix: k=1 (Switch) or "
        "k=2 (GShard)"
    ),
    "moe: capacity out of range": (
        "tx.moe_route: capacity=1000000000000; an expert takes from 1 to 4 tokens of a group (the tokens ('seq',)), "
        "so capacity is an int in that range (a larger one is slots no token fills). Fix: capacity = k * tokens / "
        "experts, times a capacity factor such as 1.25, at most 4"
    ),
    "moe: expert not a name": ("tx.moe_route: expert=3 is not an axis name. Fix: pass a name such as expert='expert'"),
    "moe: dispatch of a value with an expert axis": (
        "tx.moe_dispatch: x has an axis 'expert', which the dispatch table brings (x 'batch=2 expert=3 seq=4'); the "
        "einsum would pair the two and take their diagonal. Fix: rename x's axis (tx.rename(x, {'expert': ...})), "
        "or route with expert=/slot= names x lacks"
    ),
    "memory: more than the devices hold": (
        "tnp.zeros: a value of named shape 'a=1000000000000 b=1000000000000' is 3.64e+12 TiB, more than the 8 cpu "
        "devices (the host's memory) hold (16 GiB); JAX would abort the process. Fix: check the sizes (a size in "
        "bytes or a product of two sizes passed as one size?), or shard it over a larger mesh"
    ),
    "memory: an empty value XLA cannot build": (
        "tnp.zeros: a value of named shape 'a=1000000000000 b=0' is empty, but its other sizes make 3.64 TiB, more "
        "than the 8 cpu devices (the host's memory) hold (16 GiB); XLA builds an empty value from those sizes and "
        "can abort the process. Fix: check the sizes (a size in bytes or a product of two sizes passed as one size?)"
    ),
    "selection: sample along an empty axis": (
        "tx.random.categorical: axis 'vocab' of logits has size 0, so there is no category to draw. Fix: draw along "
        "an axis with at least one category"
    ),
    "selection: integer logits": (
        "tx.random.categorical: logits have dtype int32; logits are unnormalised log-probabilities, floats. Fix: "
        "logits.astype(jnp.float32) (or pass log-probabilities, tnp.log(probs))"
    ),
    "selection: randint of floats": (
        "tx.random.randint: dtype=float32 is not an integer dtype; randint draws integers. Fix: dtype=jnp.int32, or "
        "tx.random.uniform(key, shape, minval=..., maxval=...) for floats"
    ),
    "windows: one kernel axis for two spatial axes": (
        "tnp.conv: kernel axis 'kh' is the window of both 'height' and 'width'; each spatial axis slides a kernel "
        "axis of its own. Fix: give the kernel one window axis per spatial axis, e.g. spatial={'height': 'kh', "
        "'width': 'kw'}"
    ),
    "windows: zero-size window": (
        "tnp.conv: kernel axis 'kh' (the window of 'height') has size 0; a window holds at least one element. Fix: "
        "give the kernel's window axes sizes of at least 1"
    ),
    "fitting_mesh: a mesh axis name twice": (
        "tx.fitting_mesh: mesh axis names ('x', 'x') have 'x' twice; each mesh axis has a name of its own. Fix: "
        "name every axis once with a string, e.g. ('data', 'model')"
    ),
}


# Sites no case produces, each with the reason; keyed by path and the message's longest literal piece.
EXEMPT = {
    # mypy diagnostics of the plugin: pytest-mypy-plugins compares them in full as a user meets them, in
    # tests/plugin/test_annotations.yml (case syntax_not_a_string_and_too_many_specs).
    ("typed_xmap/plugin/_hooks/_annotated.py", "NamedArray takes a dtype and at most two spec strings, got"),
    ("typed_xmap/plugin/_hooks/_annotated.py", "NamedArray specs must be string literals; fix:"),
    # Defensive: the names that reach bound_size come from split_axis and the einsum parser, which only
    # ever yield strings (a non-string axis is refused there first).
    ("typed_xmap/_ops/_tnp/_mapped_axes.py", ". Fix: pass the axis name as a str"),
    # Needs devices of two platforms: backend= names a platform jax.devices() must have, and the tests'
    # mesh is of the same (CPU) devices, so backend and mesh cannot disagree here.
    ("typed_xmap/_xmap/_cache.py", ". Fix: drop backend=, or set a mesh of"),
    # Defensive: every sharding a user can build (JAX 0.10 and later) is a NamedSharding or one device's (fully
    # replicated); PositionalSharding is gone. A struct with another sharding could not be transposed with it.
    (
        "typed_xmap/_ops/_convert.py",
        "cannot be moved with them. Fix: give the struct its named dims sorted by name (then nothing moves), or a "
        "NamedSharding",
    ),
    # Defensive: vmap's own out_axes check, behind ours (_body checks every carried axis is listed first).
    (
        "typed_xmap/_xmap/_jax_errors.py",
        "). Fix: list every named axis an output carries in its out_axes, or reduce it in the body",
    ),
}

# Every module of typed_xmap/ with a raise site, so a new module is held to the catalogue at once.
CATALOGUED = sorted({path for path, *_ in message_sites.sites([])})


def test_cases_and_messages_match():
    assert list(CASES) == list(MESSAGES)


@pytest.mark.parametrize("name", list(CASES))
def test_message(name):
    produce, error_type, kind = CASES[name]
    with pytest.raises(NamedShapeError) as info:
        produce()
    assert type(info.value) is error_type
    assert info.value.kind is kind
    assert normalise(str(info.value)) == MESSAGES[name]


def test_every_site_has_a_case():
    catalogue = "\n".join(MESSAGES.values())
    found = message_sites.sites(CATALOGUED)
    missing = [
        f"{path}:{line} {callee}: {piece!r}"
        for path, line, callee, piece in found
        if piece not in catalogue and (path, piece) not in EXEMPT
    ]
    assert not missing, "raise sites with no case in tests/test_messages.py:\n" + "\n".join(missing)
    stale = EXEMPT - {(path, piece) for path, _, _, piece in found}
    assert not stale, f"exemptions that match no raise site: {sorted(stale)}"


def test_the_catalogue_covers_every_raising_module():
    assert "typed_xmap/_xmap/_api.py" in CATALOGUED
    assert "typed_xmap/_algebra/_spec.py" in CATALOGUED
    assert len(CATALOGUED) == len({path for path, *_ in message_sites.sites([])})


@pytest.mark.parametrize("name", list(MESSAGES))
def test_every_message_says_how_to_fix_it(name):
    assert "fix:" in MESSAGES[name].lower()


def test_every_exempt_message_says_how_to_fix_it():
    texts = {(path, line): text for path, line, text in message_sites.literal_texts(CATALOGUED)}
    exempt = [(path, line) for path, line, _, piece in message_sites.sites(CATALOGUED) if (path, piece) in EXEMPT]
    assert len(exempt) == len(EXEMPT)
    lacking = [f"{path}:{line}" for path, line in exempt if "fix:" not in texts[path, line].lower()]
    assert not lacking, f"exempt messages without a Fix: {lacking}"
