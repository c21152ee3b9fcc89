"""``@tx.typed`` checks containers of NamedArrays in full, on every call, binding one size per name."""

from typing import Protocol, runtime_checkable

import jax.numpy as jnp
import pytest

import typed_xmap as tx
from typed_xmap import NamedArray, NamedShapeError, f32


def v(*shape_and_axes):
    *shape, axes = shape_and_axes
    return tx.named(jnp.ones(tuple(shape)), axes.split())


def test_a_dict_with_one_wrong_value_is_always_caught():
    @tx.typed
    def f(ws: dict[str, NamedArray[f32, "embed"]]) -> None:
        pass

    ws = {f"k{i}": v(4, "embed") for i in range(20)}
    f(ws)
    ws["b"] = v(4, "emb")
    for _ in range(20):  # beartype alone samples one value per call
        with pytest.raises(NamedShapeError, match=r"f\(\) argument ws\['b'\] is NamedArray\(float32\[emb=4\]\)"):
            f(ws)


def test_a_list_element_is_bound_to_the_call_wide_sizes():
    @tx.typed
    def f(x: NamedArray[f32, "a"], layers: list[NamedArray[f32, "a b"]]) -> None:
        pass

    good = [v(2, 3, "a b")] * 10
    f(v(2, "a"), good)
    bad = list(good)
    bad[3] = v(2, 4, "a b")
    for _ in range(20):
        with pytest.raises(NamedShapeError, match=r"argument layers\[3\] .* axis 'b' has size 4 but was bound to 3"):
            f(v(2, "a"), bad)
    with pytest.raises(NamedShapeError, match=r"argument layers\[0\] .* axis 'a' has size 5 but was bound to 2"):
        f(v(2, "a"), [v(5, 3, "a b")])


def test_tuples_fixed_and_variadic_and_star_args():
    @tx.typed
    def f(pair: tuple[NamedArray[f32, "a"], NamedArray[f32, "b"]], *rest: tuple[NamedArray[f32, "a"], ...]) -> None:
        pass

    f((v(2, "a"), v(3, "b")), (v(2, "a"), v(2, "a")))
    with pytest.raises(NamedShapeError, match=r"argument pair\[1\] is NamedArray\(float32\[a=3\]\)"):
        f((v(2, "a"), v(3, "a")))
    with pytest.raises(
        NamedShapeError,
        match=r"parameter .pair. is \(NamedArray\(float32\[a=2\]\),\), which does not match tuple.*: "
        r"it is a tuple of 1 element, not 2",
    ):
        f((v(2, "a"),))
    with pytest.raises(NamedShapeError, match=r"argument rest\[1\]\[0\] is NamedArray\(float32\[a=5\]\)"):
        f((v(2, "a"), v(3, "b")), (v(2, "a"),), (v(5, "a"),))


def test_optional_union_and_nesting():
    @tx.typed
    def f(
        x: NamedArray[f32, "a"] | None,
        y: NamedArray[f32, "b"] | list[NamedArray[f32, "b"]],
        z: dict[str, list[NamedArray[f32, "a b"]]] | None = None,
    ) -> None:
        pass

    f(None, v(3, "b"))
    f(v(2, "a"), [v(3, "b")], {"k": [v(2, 3, "a b")]})
    with pytest.raises(NamedShapeError, match=r"argument z\['k'\]\[1\] is NamedArray\(float32\[a=2, b=4\]\)"):
        f(v(2, "a"), [v(3, "b")], {"k": [v(2, 3, "a b"), v(2, 4, "a b")]})
    with pytest.raises(NamedShapeError, match=r"argument y\[0\] is NamedArray\(float32\[c=3\]\)"):
        f(None, [v(3, "c")])
    with pytest.raises(NamedShapeError, match=r"parameter 'x' is NamedArray\(float32\[b=2\]\)"):
        f(v(2, "b"), v(3, "b"))


def test_a_failed_union_alternative_binds_nothing():
    @tx.typed
    def f(
        x: tuple[NamedArray[f32, "a"], NamedArray[f32, "b=9"]] | NamedArray[f32, "a"], y: NamedArray[f32, "a"]
    ) -> None:
        pass

    pair = (v(2, "a"), v(3, "b"))  # binds a=2 before failing on b=9; then the NamedArray alternative fails too
    with pytest.raises(NamedShapeError):
        f(pair, v(2, "a"))
    f(v(4, "a"), v(4, "a"))


def test_container_returns_are_checked_in_full():
    @tx.typed
    def f(x: NamedArray[f32, "a"], n: int) -> list[NamedArray[f32, "a"]]:
        return [x] * n + [v(3, "a")]

    with pytest.raises(
        NamedShapeError, match=r"f\(\) return value\[5\] is NamedArray\(float32\[a=3\]\), .* bound to 2"
    ):
        f(v(2, "a"), 5)


def test_non_named_parts_of_a_container_hint_are_still_checked():
    @tx.typed
    def f(ws: dict[str, NamedArray[f32, "a"]]) -> None:
        pass

    with pytest.raises(NamedShapeError, match=r"argument ws key 3 is 3, which does not match str"):
        f({3: v(2, "a")})


def test_dataclass_pytrees_are_checked_field_by_field():
    import dataclasses

    import jax

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Block:
        w: NamedArray[f32, "embed hidden"]
        norms: list[NamedArray[f32, "embed"]]
        name: str = "block"

    @tx.typed
    def f(x: NamedArray[f32, "embed"], block: Block, blocks: list[Block] | None = None) -> None:
        pass

    good = Block(v(4, 8, "embed hidden"), [v(4, "embed")] * 2)
    f(v(4, "embed"), good, [good, good])
    with pytest.raises(NamedShapeError, match=r"argument block\.w is NamedArray\(float32\[embed=5, hidden=8\]\)"):
        f(v(4, "embed"), Block(v(5, 8, "embed hidden"), []))
    bad = Block(v(4, 8, "embed hidden"), [v(4, "embed"), v(4, "emb")])
    for _ in range(5):  # on every call: no layout cache for a function with a dataclass hint
        with pytest.raises(
            NamedShapeError, match=r"argument blocks\[1\]\.norms\[1\] is NamedArray\(float32\[emb=4\]\)"
        ):
            f(v(4, "embed"), good, [good, bad])
    with pytest.raises(NamedShapeError, match=r"parameter 'block' is 3, which does not match .*Block: it is an int"):
        f(v(4, "embed"), 3)


def test_typed_dict_fields_are_checked_with_their_key_in_the_path():
    from typing import NotRequired, TypedDict

    class Params(TypedDict):
        w: NamedArray[f32, "in out"]
        b: NamedArray[f32, "out"]
        scale: NotRequired[NamedArray[f32, "out"]]
        name: str

    @tx.typed
    def f(params: Params, x: NamedArray[f32, "batch in"]) -> NamedArray[f32, "batch out"]:
        return x.sum("in") * params["b"]

    @tx.typed
    def init(n: int) -> Params:
        return {"w": v(3, n, "in out"), "b": v(4, "out"), "name": "dense"}

    good: Params = {"w": v(3, 4, "in out"), "b": v(4, "out"), "name": "dense"}
    x = v(2, 3, "batch in")
    assert f(good, x).named_shape == {"batch": 2, "out": 4}
    assert f({**good, "scale": v(4, "out")}, x).named_shape == {"batch": 2, "out": 4}  # type: ignore[typeddict-item]
    for _ in range(5):  # on every call, whatever beartype samples
        with pytest.raises(NamedShapeError, match=r"f\(\) argument params\['b'\] is NamedArray\(float32\[ot=4\]\)"):
            f({**good, "b": v(4, "ot")}, x)  # type: ignore[typeddict-item]
    with pytest.raises(
        NamedShapeError, match=r"argument params\['scale'\] .* axis 'out' has size 5 but was bound to 4"
    ):
        f({**good, "scale": v(5, "out")}, x)  # type: ignore[typeddict-item]
    with pytest.raises(NamedShapeError, match=r"parameter 'params' is \{'w': NamedArray\(float32\[in=3, out=4\]\)\}, "):
        f({"w": good["w"]}, x)  # type: ignore[typeddict-item]
    assert init(4)["b"].named_shape == {"out": 4}
    with pytest.raises(NamedShapeError, match=r"init\(\) return value\['b'\] .* axis 'out' has size 4 but was bound"):
        init(5)


def test_named_tuple_carry_of_a_scan_step_is_checked_field_by_field():
    from typing import NamedTuple

    import jax

    class Carry(NamedTuple):
        h: NamedArray[f32, "batch hidden"]
        steps: NamedArray[f32, "batch"]

    @tx.typed
    def step(carry: Carry, x: NamedArray[f32, "batch hidden"]) -> tuple[Carry, NamedArray[f32, "batch hidden"]]:
        h = carry.h + x
        return Carry(h, carry.steps + 1.0), h

    def body(carry, x):
        return step(carry, tx.named(x, ["batch", "hidden"]))

    xs = jnp.ones((7, 2, 5))
    final, _ = jax.lax.scan(body, Carry(v(2, 5, "batch hidden"), v(2, "batch")), xs)
    assert final.h.named_shape == {"batch": 2, "hidden": 5}
    with pytest.raises(NamedShapeError, match=r"step\(\) argument carry\.steps is NamedArray\(float32\[btch=2\]\)"):
        jax.lax.scan(body, Carry(v(2, 5, "batch hidden"), v(2, "btch")), xs)

    @tx.typed
    def drops_an_axis(carry: Carry, x: NamedArray[f32, "batch hidden"]) -> tuple[Carry, None]:
        return Carry(carry.h, carry.steps.sum("batch")), None  # type: ignore[arg-type]

    layers = {"x": v(3, 2, 5, "layers batch hidden")}
    with pytest.raises(
        NamedShapeError, match=r"drops_an_axis\(\) return value\[0\]\.steps is NamedArray\(float32\[\]\)"
    ):
        tx.scan(
            lambda c, p: drops_an_axis(c, p["x"]), Carry(v(2, 5, "batch hidden"), v(2, "batch")), layers, axis="layers"
        )


def test_a_group_inside_a_container_is_open_per_value():
    """dict[str, NamedArray[f32, "layers *weight"]]: each weight binds *weight for itself (DESIGN: open per
    value, as the plugin keeps it); the axes it stands for still have one size across the call."""

    @tx.typed
    def total(p: dict[str, NamedArray[f32, "layers *weight"]], x: NamedArray[f32, "*weight"]) -> NamedArray[f32, ""]:
        return sum((v.sum(tuple(v.named_shape)) for v in p.values()), x.sum(tuple(x.named_shape)))

    params = {"query": v(2, 3, 4, "layers embed heads"), "norm": v(2, 3, "layers embed")}
    assert float(total(params, v(5, "mlp")).data) == 24 + 6 + 5  # x's *weight is its own too
    params["norm"] = v(2, 5, "layers embed")
    with pytest.raises(NamedShapeError, match=r"p\['norm'\].*'embed' \(in \*weight\) has size 5 but was bound to 3"):
        total(params, v(5, "mlp"))
    params["norm"] = v(3, 3, "layers embed")
    with pytest.raises(NamedShapeError, match=r"p\['norm'\].*axis 'layers' has size 3 but was bound to 2"):
        total(params, v(5, "mlp"))


def test_the_transformer_examples_loss_runs_under_typed():
    import sys
    from pathlib import Path

    import jax

    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from example_programs import load
    finally:
        sys.path.pop(0)
    example = load(Path(__file__).resolve().parents[1] / "examples" / "transformer.py", "transformer_typed_loss")
    config = example.Config()
    params = example.init(config, jax.random.key(0))
    tokens, targets = next(example.batches(config))
    assert float(tx.typed(example.loss)(params, tokens, targets)) == pytest.approx(
        float(example.loss(params, tokens, targets)), rel=1e-6
    )


class Model(Protocol):
    def __call__(self, x: NamedArray[f32, "b"]) -> NamedArray[f32, "b"]: ...


@runtime_checkable
class Sized(Protocol):
    def __len__(self) -> int: ...


def test_a_plain_protocol_hint_is_unchecked_and_a_runtime_checkable_one_checked():
    """typing refuses isinstance against a plain Protocol, so beartype cannot check it: it is left to the
    static checker (as object), wherever it sits; a @runtime_checkable Protocol is checked."""

    @tx.typed
    def apply(m: Model, ms: list[Model] | None, x: NamedArray[f32, "b"]) -> NamedArray[f32, "b"]:
        return m(x)

    assert apply(lambda y: y * 2, None, v(3, "b")).named_shape == {"b": 3}

    @tx.typed
    def count(s: Sized, x: NamedArray[f32, "b"]) -> int:
        return len(s)

    assert count([1, 2], v(3, "b")) == 2
    with pytest.raises(Exception, match="Sized"):
        count(3, v(3, "b"))


def test_a_group_in_a_container_is_each_leafs_own_and_its_axes_still_bind():
    """The stacked parameters of examples/transformer.py: every weight its own axes after ``layers`` (the plugin's
    rule, ``_algebra/_containers.py``), one size per axis name across them."""

    @tx.typed
    def depth(params: dict[str, NamedArray[f32, "layers *weight"]], x: NamedArray[f32, "*rest embed"]) -> None:
        pass

    params = {"query": v(2, 8, 4, "layers embed heads"), "mlp_in": v(2, 8, 32, "layers embed mlp")}
    for _ in range(5):
        depth(params, v(3, 8, "batch embed"))  # the group of x is bound, the leaves' own are not
    params["mlp_in"] = v(2, 6, 32, "layers embed mlp")
    with pytest.raises(NamedShapeError, match=r"params\['mlp_in'\] .* axis 'embed' \(in \*weight\) has size 6 but"):
        depth(params, v(3, 8, "batch embed"))


def test_a_bare_named_array_annotation_takes_any_named_array():
    @tx.typed
    def f(x: NamedArray, ws: list[NamedArray]) -> NamedArray:
        return x

    assert f(v(2, 3, "a b"), [v(4, "c")]).named_shape == {"a": 2, "b": 3}
    with pytest.raises(NamedShapeError, match=r"it is an ArrayImpl, not a NamedArray.*Fix: name its dims with tx"):
        f(jnp.ones(3), [])
