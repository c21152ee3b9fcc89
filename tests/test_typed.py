"""NamedArray[...] annotations and @tx.typed: runtime checks with beartype, sizes bound per call."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest
from beartype import beartype
from beartype.roar import BeartypeCallHintParamViolation, BeartypeDoorHintViolation

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import Float, NamedArray, NamedShapeError, NamedShapeSyntaxError, f32, i32
from typed_xmap._value._printing import shape_repr


def named(shape, names):
    return tx.named(jnp.ones(shape), list(names))


@tx.typed
def loss(
    x: NamedArray[f32, "batch in_features"],
    w: NamedArray[f32, "in_features out_features"],
    y: NamedArray[f32, "batch out_features"],
) -> NamedArray[f32, "batch in_features out_features"]:
    return x * w - y


x = tx.named(jnp.ones((8, 4)), ["batch", "in_features"])
w = tx.named(jnp.ones((4, 3)), ["in_features", "out_features"])
y = tx.named(jnp.ones((8, 3)), ["batch", "out_features"])


def test_accepts_matching_values_in_any_axis_order():
    assert loss(x, w, y).named_shape == {"batch": 8, "in_features": 4, "out_features": 3}
    swapped = tx.named(jnp.ones((3, 8)), ["out_features", "batch"])
    assert loss(x, w, swapped).named_shape["batch"] == 8


def test_size_bound_across_parameters():
    with pytest.raises(NamedShapeError) as info:
        loss(x, w, bad := tx.named(jnp.ones((6, 3)), ["batch", "out_features"]))
    assert str(info.value) == (
        f"loss() parameter 'y' is {shape_repr(bad)}, which does not match "
        "NamedArray[float32, 'batch out_features']: axis 'batch' has size 6 but was bound to 8 earlier in "
        "this call. Axis bindings so far in this call: batch=8 in_features=4 out_features=3. "
        "Fix: pass a value that fits the annotation, or correct the annotation"
    )


def test_missing_axis_at_a_parameter():
    with pytest.raises(NamedShapeError) as info:
        loss(bad := tx.named(jnp.ones(8), ["batch"]), w, y)
    assert str(info.value) == (
        f"loss() parameter 'x' is {shape_repr(bad)}, which does not match NamedArray[float32, "
        "'batch in_features']: expected named axes 'batch in_features' but the value has 'batch=8': it lacks "
        "'in_features'. Axis bindings so far in this call: none. "
        "Fix: pass a value that fits the annotation, or correct the annotation"
    )


def test_wrong_return_shape():
    @tx.typed
    def squash(x: NamedArray[f32, "batch in_features"]) -> NamedArray[f32, "batch"]:
        return x

    with pytest.raises(NamedShapeError) as info:
        squash(x)
    assert str(info.value) == (
        f"test_wrong_return_shape.<locals>.squash() return value is {shape_repr(x)}, "
        "which does not match NamedArray[float32, 'batch']: expected named axes 'batch' but "
        "the value has 'batch=8 in_features=4': it carries undeclared 'in_features'. Axis bindings so far in "
        "this call: batch=8 in_features=4. "
        "Fix: pass a value that fits the annotation, or correct the annotation"
    )


def test_return_size_bound_to_parameters():
    @tx.typed
    def head(x: NamedArray[f32, "batch"]) -> NamedArray[f32, "batch"]:
        return tx.named(jnp.ones(5), ["batch"])

    with pytest.raises(NamedShapeError, match="axis 'batch' has size 5 but was bound to 8 earlier"):
        head(tx.named(jnp.ones(8), ["batch"]))


def test_wrong_dtype():
    @tx.typed
    def count(n: NamedArray[i32, "batch"]) -> None:
        pass

    with pytest.raises(NamedShapeError) as info:
        count(bad := tx.named(jnp.ones(3), ["batch"]))
    assert str(info.value) == (
        f"test_wrong_dtype.<locals>.count() parameter 'n' is {shape_repr(bad)}, which does not "
        "match NamedArray[int32, 'batch']: its dtype is float32, expected int32. Axis bindings so far in "
        "this call: none. "
        "Fix: pass a value that fits the annotation, or correct the annotation"
    )
    count(tx.named(jnp.ones(3, jnp.int32), ["batch"]))


def test_a_raw_array_is_named_in_the_error():
    expected = r"it is an ArrayImpl, not a NamedArray\. .* Fix: name its dims with tx\.named"
    with pytest.raises(NamedShapeError, match=expected):
        loss(jnp.ones((8, 4)), w, y)


def test_declared_sizes_kinds_and_positional_symbols():
    @tx.typed
    def f(a: NamedArray[Float, "batch=8", "n 3"], b: NamedArray[f32, "", "n"]) -> None:
        pass

    f(tx.named(jnp.ones((8, 5, 3)), {0: "batch"}), tx.named(jnp.ones(5), {}))
    with pytest.raises(NamedShapeError, match="axis 'batch' has size 4 but the annotation says 8"):
        f(tx.named(jnp.ones((4, 5, 3)), {0: "batch"}), tx.named(jnp.ones(5), {}))
    with pytest.raises(NamedShapeError, match="positional dim 'n' has size 6 but was bound to 5"):
        f(tx.named(jnp.ones((8, 5, 3)), {0: "batch"}), tx.named(jnp.ones(6), {}))


def test_optional_and_keyword_parameters():
    @tx.typed
    def f(x: NamedArray[f32, "a"], *, y: NamedArray[f32, "a"] | None = None) -> NamedArray[f32, "a"]:
        return x if y is None else x + y

    a3, a4 = named((3,), "a"), named((4,), "a")
    assert f(a3).named_shape == {"a": 3}
    assert f(a3, y=a3).named_shape == {"a": 3}
    with pytest.raises(NamedShapeError, match="parameter 'y'"):
        f(a3, y=a4)


def test_calls_are_independent_and_nesting_keeps_outer_bindings():
    @tx.typed
    def inner(v: NamedArray[f32, "a"]) -> NamedArray[f32, "a"]:
        return v

    @tx.typed
    def outer(u: NamedArray[f32, "a"], v: NamedArray[f32, "a"]) -> NamedArray[f32, "a"]:
        inner(named((5,), "a"))  # its own call: a=5 there does not clash with a=3 here
        return u + v

    assert outer(named((3,), "a"), named((3,), "a")).named_shape == {"a": 3}
    assert outer(named((7,), "a"), named((7,), "a")).named_shape == {"a": 7}


def test_checked_once_under_jit():
    calls = []

    @jax.jit
    @tx.typed
    def f(x: NamedArray[f32, "batch in_features"]) -> NamedArray[f32, "batch in_features"]:
        calls.append(1)
        return x * 2.0

    assert f(x).named_shape == {"batch": 8, "in_features": 4}
    f(x)
    assert len(calls) == 1
    with pytest.raises(NamedShapeError, match="lacks 'in_features'"):
        f(named((8, 4), ("batch", "other")))


def test_plain_beartype_checks_each_argument():
    @beartype
    def f(x: NamedArray[f32, "batch"]) -> NamedArray[f32, "batch"]:
        return x

    f(named((2,), ["batch"]))
    with pytest.raises(BeartypeCallHintParamViolation, match=r"NamedArray\[float32, 'batch'\]"):
        f(named((2,), ["other"]))


def test_isinstance_and_annotation_errors():
    assert isinstance(x, NamedArray[f32, "in_features batch"])
    assert not isinstance(x, NamedArray[f32, "batch"])
    assert not isinstance(jnp.ones(3), NamedArray[f32, ""])
    assert NamedArray[f32, "a b"] is NamedArray[f32, "a  b"]  # cached by parsed meaning
    with pytest.raises(NamedShapeSyntaxError, match="takes a dtype and one or two spec strings"):
        NamedArray["batch"]
    with pytest.raises(NamedShapeSyntaxError, match="the first argument must be a dtype"):
        NamedArray[int, "batch"]
    with pytest.raises(NamedShapeSyntaxError, match="is not an axis name"):
        NamedArray[f32, "a 1b"]
    with pytest.raises(TypeError, match="is an annotation, not a constructor"):
        NamedArray[f32, "a"]()


def test_lambdas_and_unannotated_functions():
    assert tx.typed(lambda v: v)(3) == 3

    @tx.typed
    def mixed(v: NamedArray[f32, "a"], scale: float, /, *rest: int, flag: bool = False, **extra: str) -> float:
        return scale

    assert mixed(named((2,), "a"), 2.0, 1, 2, flag=True, k="s") == 2.0


def test_cached_layouts_still_check_every_call_and_run_the_body_once():
    calls = []

    @tx.typed
    def f(v: NamedArray[f32, "a"], w: NamedArray[f32, "a"]) -> NamedArray[f32, "a"]:
        calls.append(1)
        return v if len(calls) != 3 else tx.named(jnp.ones(2), ["b"])

    a3 = named((3,), "a")
    for _ in range(2):
        assert f(a3, a3).named_shape == {"a": 3}
    with pytest.raises(NamedShapeError, match="return value"):  # same parameters, a new (bad) return layout
        f(a3, a3)
    assert len(calls) == 3  # the body ran once per call
    with pytest.raises(NamedShapeError, match="parameter 'w'"):  # a new parameter layout is checked
        f(a3, named((4,), "a"))
    assert f(a3, a3).named_shape == {"a": 3}
    with pytest.raises(NamedShapeError, match="parameter 'w'"):  # and a rejected layout stays rejected
        f(a3, named((4,), "a"))


def test_star_args_errors_name_the_element():
    @tx.typed
    def first(*xs: NamedArray[f32, "a"]) -> NamedArray[f32, "a"]:
        return xs[0]

    with pytest.raises(NamedShapeError) as info:
        first(named((5,), "a"), bad := named((3,), "a"))
    assert str(info.value) == (
        f"test_star_args_errors_name_the_element.<locals>.first() argument xs[1] is {shape_repr(bad)}, "
        "which does not match NamedArray[float32, 'a']: axis 'a' has size 3 but was bound to 5 earlier in this "
        "call. Axis bindings so far in this call: a=5. "
        "Fix: pass a value that fits the annotation, or correct the annotation"
    )


def test_container_return_errors_name_the_element():
    import typed_xmap.numpy as tnp

    @tx.typed
    def split(v: NamedArray[f32, "a b"]) -> tuple[NamedArray[f32, "a"], NamedArray[f32, "b"]]:
        return tnp.sum(v, "b"), tnp.sum(v, "b")

    with pytest.raises(
        NamedShapeError,
        match=r"split\(\) return value\[1\] is NamedArray\(float32\[a=2\]\), which does not match "
        r"NamedArray\[float32, 'b'\]: expected named axes 'b'",
    ):
        split(tx.named(jnp.ones((2, 3)), ["a", "b"]))


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (
            ([],),
            "NamedArray[float32, []]: the shape is given by spec strings, got list []. "
            "Fix: write NamedArray[float32, '']",
        ),
        (
            (["a", "b"],),
            "NamedArray[float32, ['a', 'b']]: the shape is given by spec strings, got list ['a', 'b']. "
            "Fix: write NamedArray[float32, 'a b']",
        ),
        (
            ("a", ("n", 3)),
            "NamedArray[float32, 'a', ('n', 3)]: the shape is given by spec strings, got tuple "
            "('n', 3). Fix: write NamedArray[float32, 'a', 'batch features']",
        ),
        (
            (None,),
            "NamedArray[float32, None]: the shape is given by spec strings, got NoneType None. "
            "Fix: write NamedArray[float32, 'batch features']",
        ),
    ],
)
def test_a_spec_that_is_not_a_string_is_a_syntax_error(specs, message):
    """Fuzz finding: NamedArray[f32, []] raised TypeError: unhashable type: 'list'."""
    with pytest.raises(NamedShapeSyntaxError) as info:
        NamedArray[(f32, *specs)]
    assert str(info.value) == message
    assert info.value.kind is tx._algebra.ErrorKind.SYNTAX


def test_a_spec_of_separators_alone_is_a_syntax_error_and_empty_is_no_axes():
    """Fuzz finding: NamedArray[f32, ",,"] meant NamedArray[f32, ""]."""
    assert isinstance(tx.named(jnp.ones(()), []), NamedArray[f32, ""])
    with pytest.raises(NamedShapeSyntaxError, match="commas separate names, but there are none"):
        NamedArray[f32, ",,"]
    with pytest.raises(NamedShapeSyntaxError, match="commas separate names, but there are none"):
        NamedArray[f32, "", ","]


def test_keyword_calls_and_mixed_hints_use_the_layout_cache_and_raise_as_before():
    @tx.typed
    def f(x: NamedArray[f32, "a"], w: NamedArray[f32, "a b"], scale: float, flag: bool = False) -> NamedArray[f32, "b"]:
        import typed_xmap.numpy as tnp

        return tnp.sum(x * w, "a")

    x, w, bad = named((3,), "a"), named((3, 2), ["a", "b"]), named((4, 2), ["a", "b"])
    for _ in range(3):  # the first call fills the cache, the others hit it
        assert f(x, w=w, scale=2.0).named_shape == {"b": 2}
        assert f(x, w, 2.0, flag=True).named_shape == {"b": 2}
        assert f(scale=1.0, w=w, x=x).named_shape == {"b": 2}
        with pytest.raises(NamedShapeError, match=r"(?s)parameter 'w'.*axis 'a' has size 4 but was bound to 3"):
            f(x, w=bad, scale=2.0)
        with pytest.raises(BeartypeCallHintParamViolation):
            f(x, w=w, scale="2")
        with pytest.raises(BeartypeCallHintParamViolation):
            f(x, w, 2.0, flag=None)
        with pytest.raises(TypeError, match=r"missing|scale"):
            f(x, w=w)
        with pytest.raises(TypeError):
            f(x, w=w, scale=1.0, other=1)


def test_a_class_return_hint_is_checked_on_every_cached_call():
    @tx.typed
    def g(x: NamedArray[f32, "a"], *, as_int: bool = False) -> float:
        return 1 if as_int else 1.0  # type: ignore[return-value]

    x = named((3,), "a")
    for _ in range(2):
        assert g(x) == 1.0
        assert g(x, as_int=False) == 1.0
        with pytest.raises(BeartypeDoorHintViolation, match="violates type hint"):
            g(x, as_int=True)


def test_positional_only_parameters_passed_by_keyword_still_raise():
    @tx.typed
    def h(x: NamedArray[f32, "a"], /) -> NamedArray[f32, "a"]:
        return x

    x = named((3,), "a")
    assert h(x).named_shape == {"a": 3}
    with pytest.raises(TypeError):
        h(x=x)  # type: ignore[call-arg]


@tx.typed
def layer_norm_any(x: NamedArray[f32, "*rest embed"]) -> NamedArray[f32, "*rest embed"]:
    return x - tnp.mean(x, "embed")


@tx.typed
def pool_any(
    x: NamedArray[f32, "*rest seq embed"], mask: NamedArray[f32, "*rest seq"]
) -> NamedArray[f32, "*rest embed"]:
    return tnp.sum(x * mask, "seq")


def test_a_group_binds_whatever_other_axes():
    h = named((2, 3, 4), ["batch", "seq", "embed"])
    assert layer_norm_any(h).named_shape == {"batch": 2, "seq": 3, "embed": 4}
    assert layer_norm_any(named((4,), ["embed"])).named_shape == {"embed": 4}
    assert pool_any(h, named((2, 3), ["batch", "seq"])).named_shape == {"batch": 2, "embed": 4}
    with pytest.raises(NamedShapeError, match="the value lacks 'batch'") as info:
        pool_any(h, named((3,), ["seq"]))
    assert info.value.kind is tx._algebra.ErrorKind.AXIS_MISSING
    with pytest.raises(NamedShapeError, match=r"axis 'batch' \(in \*rest\) has size 5 but was bound to 2"):
        pool_any(h, named((5, 3), ["batch", "seq"]))
    with pytest.raises(NamedShapeError, match="lacks 'embed'"):
        layer_norm_any(named((2,), ["batch"]))


def test_a_group_return_is_checked_also_from_the_layout_cache():
    @tx.typed
    def drop_first(x: NamedArray[f32, "*rest embed"], axis: str) -> NamedArray[f32, "*rest embed"]:
        return tnp.sum(x, axis) if axis != "embed" else x

    h = named((2, 3, 4), ["batch", "seq", "embed"])
    for _ in range(3):  # the second call takes the cached layout: the return is still checked
        assert drop_first(h, "embed").named_shape == h.named_shape
        with pytest.raises(NamedShapeError, match="group '\\*rest' stands for 'seq=3'"):
            drop_first(h, "batch")


def test_the_layout_cached_wrapper_binds_every_call_form_as_the_function_does():
    """The cached wrapper is generated with the function's own signature: positional-only, keyword-only,
    defaults and CPython's own argument errors, under the function's name."""

    @tx.typed
    def f(x: NamedArray[f32, "a"], n: int = 1, /, *, scale: float = 1.0, tag: object = None) -> NamedArray[f32, "a"]:
        return x * (n * scale)

    a3 = named((3,), "a")
    for _ in range(2):
        assert float(f(a3).data[0]) == 1.0
        assert float(f(a3, 2, scale=3.0, tag="t").data[0]) == 6.0
        with pytest.raises(BeartypeCallHintParamViolation):
            f(a3, 2.5)
        with pytest.raises(TypeError, match=r"f\(\) missing 1 required positional argument: 'x'"):
            f()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"f\(\) takes from 1 to 2 positional arguments but 3 were given"):
            f(a3, 1, 2.0)  # type: ignore[misc]
        with pytest.raises(TypeError, match=r"f\(\) got some positional-only arguments passed as keyword"):
            f(x=a3)  # type: ignore[call-arg]
    assert f.__wrapped__.__name__ == "f"
    assert str(inspect.signature(f)) == str(inspect.signature(f.__wrapped__))


def test_an_omitted_default_never_vouches_for_an_explicit_value():
    """A default that breaks its own hint is not checked when omitted (as beartype), and an explicit value of
    its type is still checked on every call; a NamedArray default keeps the function off the cache."""

    @tx.typed
    def f(x: NamedArray[f32, "a"], flag: bool = None) -> NamedArray[f32, "a"]:  # type: ignore[assignment]  # noqa: RUF013
        return x

    zero = named((0,), "a")

    @tx.typed
    def g(x: NamedArray[f32, "a"], y: NamedArray[f32, "a"] = zero) -> NamedArray[f32, "a"]:
        return x

    a3 = named((3,), "a")
    for _ in range(2):
        assert f(a3) is a3
        with pytest.raises(BeartypeCallHintParamViolation):
            f(a3, None)
        assert g(a3) is a3
        with pytest.raises(NamedShapeError, match="parameter 'y'"):
            g(a3, zero)


def test_a_value_of_another_class_with_the_same_layout_is_checked_again():
    class Lookalike:
        def __init__(self, value: NamedArray) -> None:
            self.axes, self.mapped, self.data = value.axes, value.mapped, value.data

    @tx.typed
    def f(x: NamedArray[f32, "a"]) -> None:
        return None

    a3 = named((3,), "a")
    f(a3)
    with pytest.raises(NamedShapeError, match=r"parameter 'x' is .*Lookalike.*not a NamedArray"):
        f(Lookalike(a3))  # type: ignore[arg-type]


def test_parameters_named_like_the_wrappers_own_variables_reach_the_function():
    """``key`` is what JAX code calls a PRNG key: the cached wrapper must not shadow it."""

    @tx.typed
    def f(x: NamedArray[f32, "a"], key: int, result: int, known: int, wrapper: int) -> int:
        return key * 1000 + result * 100 + known * 10 + wrapper

    a3 = named((3,), "a")
    for _ in range(2):
        assert f(a3, 1, 2, 3, 4) == 1234
        assert f(a3, wrapper=4, known=3, result=2, key=1) == 1234


def test_parameters_named_like_builtins_the_wrapper_uses():
    @tx.typed
    def f(x: NamedArray[f32, "a"], type: str, isinstance: float = 1.0) -> NamedArray[f32, "a"]:
        return x * isinstance if type == "scale" else x

    a3 = named((3,), "a")
    for _ in range(2):
        assert float(f(a3, "scale", 2.0).data[0]) == 2.0
        assert float(f(a3, type="keep").data[0]) == 1.0


def test_a_call_that_misses_the_cache_reaches_the_function_as_the_cached_path_does():
    """A checked-then-run call passes positional parameters positionally, as a hit does: a function whose
    signature comes from ``functools.wraps`` over ``*args`` takes both."""
    import functools

    def body(x: NamedArray[f32, "a"], y: NamedArray[f32, "a"]) -> NamedArray[f32, "a"]:
        return x + y

    @functools.wraps(body)
    def positional_only_really(*args):  # type: ignore[no-untyped-def]
        return body(*args)

    f = tx.typed(positional_only_really)
    a3 = named((3,), "a")
    assert f(a3, y=a3).named_shape == {"a": 3}  # the first call misses the cache
    assert f(x=a3, y=a3).named_shape == {"a": 3}  # and later ones hit it


@tx.typed
def uses_later(x: NamedArray[f32, "a"], later: LaterDefined) -> NamedArray[f32, "a"]:
    return x


class LaterDefined:  # defined after the function above is decorated: its hints resolve on the first call
    pass


def test_a_forward_reference_resolved_on_the_first_call_keeps_the_functions_name():
    a3 = named((3,), "a")
    for _ in range(2):
        with pytest.raises(TypeError, match=r"^uses_later\(\) missing 1 required positional argument: 'later'"):
            uses_later(a3)  # type: ignore[call-arg]
        assert uses_later(a3, LaterDefined()) is a3
    with pytest.raises(BeartypeCallHintParamViolation):
        uses_later(a3, 1)  # type: ignore[arg-type]


def test_a_return_without_a_layout_is_checked_on_every_call():
    """A NamedArray holding NumPy data has no aval to key by: its return is never accepted from the cache."""
    import numpy as np

    @tx.typed
    def f(x: NamedArray[f32, "a"], as_numpy: bool) -> NamedArray[f32, "a"]:
        return tx.named(np.ones(4 if as_numpy else 3, np.float32), ["a"]) if as_numpy else x

    a3 = named((3,), "a")
    for _ in range(3):
        assert f(a3, False) is a3
        with pytest.raises(NamedShapeError, match="return value"):
            f(a3, True)
