"""The message catalogue: every message typed_xmap raises, produced by a test and compared in full.

jaxtyping's ``test/test_messages.py`` is the model. A case makes the error the way a user would meet it,
and checks its class, its ``ErrorKind`` and its whole text, so a change of wording is a visible diff
here (and in docs/errors.md, the catalogue for readers). ``test_every_site_has_a_case`` holds the files
listed in ``CATALOGUED`` to it: each raise site there (``tests/message_sites.py`` finds them) has a
message below. To catalogue another module, add its cases and its path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32
from typed_xmap._algebra import (
    ErrorKind,
    NamedShapeError,
    NamedShapeSyntaxError,
    broadcast_positional,
    einsum_result,
    parse_einsum,
    parse_named_axes,
    parse_positional,
    positional_einsum,
    reduce_named_shape,
    union_named_shapes,
)

E, S = NamedShapeError, NamedShapeSyntaxError
K = ErrorKind


def on_mesh(fn):
    def run():
        with jax.set_mesh(jax.make_mesh((4, 2), ("x", "y"))):
            return fn()

    return run


def x():
    return tx.named(jnp.ones((8, 4)), ["batch", "feat"])


def typed_call():
    @tx.typed
    def f(a: NamedArray[f32, "batch feat"], b: NamedArray[f32, "feat"]) -> NamedArray[f32, "batch"]:
        return tnp.sum(a * b, "feat")

    return f(x(), tx.named(jnp.ones(5), ["feat"]))


def many_axes():
    spec = parse_einsum("{" + ", ".join(f"a{i}" for i in range(53)) + "}->{}")
    names = [f"a{i}" for i in range(53)]
    result = einsum_result(spec, [dict.fromkeys(names, 1)], [()])
    return positional_einsum(spec, [names], result)


CASES = {
    # _algebra/_spec.py
    "spec: not a string": (lambda: parse_named_axes(3), S, K.SYNTAX),
    "spec: separators alone": (lambda: parse_named_axes(" ,, "), S, K.SYNTAX),
    "spec: not an axis name": (lambda: parse_named_axes("batch 3d"), S, K.SYNTAX),
    "spec: bad size": (lambda: parse_named_axes("batch=3x in"), S, K.SYNTAX),
    "spec: axis listed twice": (lambda: parse_named_axes("a b a"), S, K.SYNTAX),
    "spec: ... twice": (lambda: parse_positional("n ... 3 ..."), S, K.SYNTAX),
    "spec: not a positional dim": (lambda: parse_positional("n 3.5"), S, K.SYNTAX),
    # _algebra/_shapes.py
    "shapes: size clash": (
        lambda: union_named_shapes([{"batch": 8, "feat": 4}, {"batch": 6}], operation="x + y", operands=["x", "y"]),
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
    "resources_of: not a NamedArray": (lambda: tx.resources_of(jnp.ones(3)), E, K.INVALID_ARGUMENT),
    # _visualize.py
    "visualize: not a NamedArray": (lambda: tx.visualize(jnp.ones(3)), E, K.INVALID_ARGUMENT),
    "visualize: a tracer": (
        lambda: jax.jit(lambda v: tx.visualize(tx.named(v, ["batch"])))(jnp.ones(8)),
        E,
        K.INVALID_ARGUMENT,
    ),
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
        "them to the same size"
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
        "typed_call.<locals>.f() parameter 'b' is NamedArray(float32[feat=5]), which does not match "
        "NamedArray[float32, 'feat']: axis 'feat' has size 5 but was bound to 4 earlier in this call. "
        "Axis bindings so far in this call: batch=8 feat=4"
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
}


CATALOGUED = [
    "typed_xmap/_algebra/_spec.py",
    "typed_xmap/_algebra/_shapes.py",
    "typed_xmap/_algebra/_einsum.py",
    "typed_xmap/_annotations.py",
    "typed_xmap/_typed.py",
    "typed_xmap/_convert.py",
    "typed_xmap/_sharding.py",
    "typed_xmap/_visualize.py",
]


def test_cases_and_messages_match():
    assert list(CASES) == list(MESSAGES)


@pytest.mark.parametrize("name", list(CASES))
def test_message(name):
    produce, error_type, kind = CASES[name]
    with pytest.raises(NamedShapeError) as info:
        produce()
    assert type(info.value) is error_type
    assert info.value.kind is kind
    assert str(info.value) == MESSAGES[name]


def test_every_site_has_a_case():
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import message_sites
    finally:
        sys.path.pop(0)
    catalogue = "\n".join(MESSAGES.values())
    missing = [
        f"{path}:{line} {callee}: {piece!r}"
        for path, line, callee, piece in message_sites.sites(CATALOGUED)
        if piece not in catalogue
    ]
    assert not missing, "raise sites with no case in tests/test_messages.py:\n" + "\n".join(missing)
