"""typed_xmap.numpy: reductions, softmax and elementwise functions against NumPy, on NamedArrays (eager, jit,
vmap, grad, mapped axes) and on plain per-element arrays inside nested vmaps (what an xmap body sees)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedShapeError
from typed_xmap._algebra import OpKind, operations_of
from typed_xmap._value._named_array import NamedArray, wrap

MODES = ["eager", "jit", "vmap", "mapped", "plain"]


def data(*shape, low=0.1, high=0.9, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(low, high, shape).astype(np.float32)


def named(array, names):
    """A NamedArray whose trailing dims are ``names``."""
    k = np.ndim(array) - len(names)
    return tx.named(jnp.asarray(array), {k + i: n for i, n in enumerate(names)})


def laid_out(r):
    """``r``'s data as positional dims + its data axes sorted by name."""
    names = sorted(r.axes)
    perm = list(range(r.ndim)) + [r.ndim + r.axes.index(n) for n in names]
    return jnp.transpose(r.data, perm)


def run(fn, inputs, mode, mapped="b"):
    """Run ``fn`` on ``inputs`` = [(array, names)] in ``mode``; returns (array, names): the result laid out as
    positional dims + named axes sorted by name, and those names.

    eager/jit: NamedArrays. vmap: jax.vmap over a new leading positional dim (two copies, the second
    doubled). mapped: axis ``mapped`` held by a vmap level (NamedArray.mapped), as in a typed xmap body.
    plain: every named axis is a vmap level and ``fn`` gets per-element positional arrays (untyped xmap body).
    """
    values = [named(a, n) for a, n in inputs]
    if mode == "eager":
        r = fn(*values)
        return np.asarray(laid_out(r)), tuple(sorted(r.axes))
    if mode == "jit":
        r = jax.jit(fn)(*values)
        return np.asarray(laid_out(r)), tuple(sorted(r.axes))
    if mode == "vmap":
        doubled = [named(np.stack([a, 2 * a]), n) for a, n in inputs]
        r = jax.vmap(fn)(*doubled)
        return np.asarray(laid_out(r))[0], tuple(sorted(r.axes))
    if mode == "mapped":
        return _run_mapped(fn, inputs, mapped)
    return _run_plain(fn, inputs)


def _run_mapped(fn, inputs, name):
    seen = {}
    size = next(a.shape[a.ndim - len(n) + n.index(name)] for a, n in inputs if name in n)

    def body(*arrays):
        values = [
            wrap(a, tuple(m for m in n if m != name), ((name, size),)) if name in n else named(a, n)
            for a, (_, n) in zip(arrays, inputs, strict=False)
        ]
        r = fn(*values)
        seen["names"] = tuple(sorted(r.axes + tuple(m for m, _ in r.mapped)))
        seen["ndim"] = r.ndim
        return laid_out(r)

    moved = [np.moveaxis(a, a.ndim - len(n) + n.index(name), 0) if name in n else a for a, n in inputs]
    in_axes = [0 if name in n else None for _, n in inputs]
    out = np.asarray(jax.jit(jax.vmap(body, in_axes=in_axes, axis_name=name))(*moved))
    names = seen["names"]
    if name not in names:  # reduced: every map element holds the same value
        np.testing.assert_allclose(out, np.broadcast_to(out[:1], out.shape), rtol=1e-5, atol=1e-6)
        return out[0], names
    return np.moveaxis(out, 0, seen["ndim"] + names.index(name)), names


def _run_plain(fn, inputs):
    order = sorted({n for _, ns in inputs for n in ns})
    f = fn
    for name in reversed(order):
        axes = [0 if name in ns else None for _, ns in inputs]
        f = jax.vmap(f, in_axes=axes, axis_name=name)
    moved = []
    for a, ns in inputs:
        k = a.ndim - len(ns)
        perm = [k + ns.index(n) for n in order if n in ns] + list(range(k))
        moved.append(np.transpose(a, perm))
    out = np.asarray(jax.jit(f)(*moved))  # layout: order..., positional
    return out, tuple(order)


def compare(fn, inputs, mode, expected, expected_names, mapped="b", **kw):
    got, names = run(fn, inputs, mode, mapped)
    if mode == "plain":  # names the result does not vary along come back broadcast: take element 0
        keep = [n in expected_names for n in names]
        for i in reversed(range(len(names))):
            if not keep[i]:
                np.testing.assert_allclose(got, np.broadcast_to(np.take(got, [0], axis=i), got.shape), **kw)
                got = np.take(got, 0, axis=i)
        got = np.moveaxis(got, list(range(len(expected_names))), list(range(-len(expected_names), 0)))
        names = tuple(n for n, k in zip(names, keep, strict=False) if k)
    assert names == tuple(expected_names)
    np.testing.assert_allclose(got, expected, **kw)


# ---------------------------------------------------------------------------------------------------------
# reductions

A = data(2, 3, 4)  # positional p=2, named b=3, c=4
A_NAMES = ("b", "c")
DIM = {"b": 1, "c": 2}


def np_logsumexp(a, axis, keepdims=False):
    return np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims))


REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
    "prod": np.prod,
    "var": np.var,
    "std": np.std,
    "logsumexp": np_logsumexp,
}


def np_axes(axis):
    """tnp axis on A -> (numpy axis, names that survive)."""
    if axis is None:
        return (0,), A_NAMES
    items = axis if isinstance(axis, tuple) else (axis,)
    dims = tuple(DIM[i] if isinstance(i, str) else i % 1 for i in items)
    return dims, tuple(n for n in A_NAMES if n not in items)


def reference(np_fn, axis, keepdims):
    dims, names = np_axes(axis)
    out = np_fn(A, axis=dims, keepdims=True)
    drop = [d for d in dims if d != 0 or not keepdims]
    return np.squeeze(out, tuple(drop)), names


AXES = [None, 0, -1, "b", "c", ("b", "c"), (0, "c"), ("c", 0, "b")]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("fname", sorted(REDUCTIONS))
def test_reductions_eager_match_numpy(fname, axis, keepdims):
    expected, names = reference(REDUCTIONS[fname], axis, keepdims)
    fn = getattr(tnp, fname)
    compare(lambda x: fn(x, axis, keepdims=keepdims), [(A, A_NAMES)], "eager", expected, names, rtol=2e-5)


@pytest.mark.parametrize("mode", MODES[1:])
@pytest.mark.parametrize("axis", ["b", (0, "b"), None, ("c", "b")], ids=repr)
@pytest.mark.parametrize("fname", sorted(REDUCTIONS))
def test_reductions_under_transforms(fname, axis, mode):
    keepdims = mode == "vmap"  # exercise keepdims outside eager too
    expected, names = reference(REDUCTIONS[fname], axis, keepdims)
    fn = getattr(tnp, fname)
    compare(lambda x: fn(x, axis, keepdims=keepdims), [(A, A_NAMES)], mode, expected, names, rtol=2e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("axis", [None, 0, "b", "c", ("c",)], ids=repr)
@pytest.mark.parametrize("fname", ["argmax", "argmin"])
def test_argmax_argmin(fname, axis, mode):
    np_fn = getattr(np, fname)
    single = axis[0] if isinstance(axis, tuple) else axis
    if single is None:
        expected, names = np_fn(A, axis=0), A_NAMES  # one positional dim: the flattened index is its index
    else:
        expected, names = np_fn(A, axis=DIM.get(single, 0)), tuple(n for n in A_NAMES if n != single)
    fn = getattr(tnp, fname)
    compare(lambda x: fn(x, axis), [(A, A_NAMES)], mode, expected, names)


def test_argmax_flattens_positional_dims_per_named_element_and_keepdims():
    a = data(2, 5, 3)
    x = named(a, ("n",))
    got = tnp.argmax(x)
    assert got.shape == () and got.named_shape == {"n": 3}
    np.testing.assert_array_equal(got.data, np.argmax(a.reshape(10, 3), axis=0))
    kept = tnp.argmin(x, keepdims=True)
    assert kept.shape == (1, 1) and kept.named_shape == {"n": 3}
    assert tnp.argmax(x, "n", keepdims=True).shape == (2, 5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("axis", ["b", ("b", "c"), 0, (0, "c")], ids=repr)
@pytest.mark.parametrize("fname", ["softmax", "log_softmax"])
def test_softmax_matches_numpy(fname, axis, mode):
    dims, _ = np_axes(axis)
    lse = np_logsumexp(A, dims, keepdims=True)
    expected = A - lse if fname == "log_softmax" else np.exp(A - lse)
    fn = getattr(tnp, fname)
    compare(lambda x: fn(x, axis), [(A, A_NAMES)], mode, expected, A_NAMES, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("axis", ["b", ("b", "c")], ids=repr)
def test_softmax_gradients_match_numpy_and_lower_without_isfinite(axis):
    """d/dx sum(softmax(x) * c) = s * (c - sum(s * c)); d/dx sum(log_softmax(x) * c) = c - s * sum(c)."""
    dims, _ = np_axes(axis)
    c = np.cos(np.arange(A.size, dtype=np.float32)).reshape(A.shape)
    s = np.exp(A - np_logsumexp(A, dims, keepdims=True))
    expected = {
        "softmax": s * (c - np.sum(s * c, axis=dims, keepdims=True)),
        "log_softmax": c - s * np.sum(c, axis=dims, keepdims=True),
    }
    cn = named(c, A_NAMES)
    for fname, want in expected.items():
        fn = getattr(tnp, fname)

        def loss(data, fn=fn):
            return tnp.sum(fn(wrap(data, A_NAMES), axis) * cn, (0, "b", "c")).data

        x = named(A, A_NAMES)
        got = jax.jit(jax.grad(loss))(x.data)
        np.testing.assert_allclose(got, named(want, A_NAMES).data, rtol=2e-5, atol=1e-6)
        # jax.nn's custom JVP: no isfinite guard on the max (the composed form had one, forward and back)
        assert "is_finite" not in str(jax.make_jaxpr(jax.grad(loss))(x.data))


def test_softmax_is_stable_and_handles_minus_infinity():
    a = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, -np.inf, -np.inf]], np.float32)
    out = tnp.softmax(named(a, ("k",)), "k")
    np.testing.assert_allclose(out.data[0], [0.5, 0.5, 0.0])
    assert np.isnan(np.asarray(out.data[1])).all()  # as jax.nn.softmax: all -inf gives nan


@pytest.mark.parametrize("mode", ["eager", "mapped", "plain"])
def test_all_any(mode):
    a = A > 0.5
    for fname in ("all", "any"):
        fn = getattr(tnp, fname)
        compare(lambda x, fn=fn: fn(x, "b"), [(a, A_NAMES)], mode, getattr(np, fname)(a, axis=1), ("c",))
        compare(lambda x, fn=fn: fn(x, (0, "b", "c")), [(a, A_NAMES)], mode, getattr(np, fname)(a), ())


def test_reducing_every_axis_gives_a_named_array_with_no_axes():
    out = tnp.sum(named(A, A_NAMES), (0, "b", "c"))
    assert isinstance(out, NamedArray)
    assert out.named_shape == {} and out.shape == ()
    np.testing.assert_allclose(out.data, A.sum(), rtol=1e-6)
    assert tnp.mean(named(data(3), ("b",)), "b").shape == ()


def test_axis_none_reduces_positional_dims_only_and_keepdims_keeps_positional_dims():
    x = named(A, A_NAMES)
    assert tnp.sum(x).named_shape == {"b": 3, "c": 4} and tnp.sum(x).shape == ()
    out = tnp.max(x, ("b", 0), keepdims=True)
    assert out.shape == (1,) and out.named_shape == {"c": 4}


def test_var_ddof_counts_named_axes():
    x = named(A, A_NAMES)
    np.testing.assert_allclose(tnp.var(x, ("b", "c"), ddof=1).data, A.var(axis=(1, 2), ddof=1), rtol=1e-5)
    np.testing.assert_allclose(tnp.std(x, "b", ddof=1).data, A.std(axis=1, ddof=1), rtol=1e-5)


def test_plain_value_constant_along_a_vmap_axis_counts_size_times():
    """psum semantics: inside vmap(axis_name='i'), sum over 'i' of a value that does not vary along 'i'."""
    f = jax.vmap(lambda v: (tnp.sum(jnp.float32(2.0), "i"), tnp.mean(v, "i"), tnp.max(jnp.ones(2), "i")), axis_name="i")
    s, m, mx = f(jnp.arange(4.0))
    np.testing.assert_allclose(s, 8.0)
    np.testing.assert_allclose(m, 1.5)
    np.testing.assert_allclose(mx, np.ones((4, 2)))


def test_reduction_over_a_mapped_axis_is_a_plain_reduce_in_the_jaxpr():
    """A mapped axis is gathered without a copy: the jaxpr is one reduce, no gather/broadcast of the data."""
    body = jax.vmap(lambda v: tnp.prod(wrap(v, (), (("b", 3),)), "b").data, axis_name="b", out_axes=None)
    jaxpr = str(jax.make_jaxpr(body)(jnp.ones((3, 4))))
    assert "reduce_prod" in jaxpr and "all_gather" not in jaxpr and "broadcast" not in jaxpr


@pytest.mark.parametrize("fname", ["sum", "mean", "max", "var", "logsumexp", "prod"])
def test_gradients_of_reductions(fname):
    fn = getattr(tnp, fname)
    jfn = jax.scipy.special.logsumexp if fname == "logsumexp" else getattr(jnp, fname)
    a = jnp.asarray(A)

    def loss_named(x):
        return tnp.sum(fn(x, ("b", 0)) ** 2, "c").data

    expected = jax.grad(lambda a: jnp.sum(jfn(a, axis=(1, 0)) ** 2))(a)
    got = jax.grad(loss_named)(named(a, A_NAMES))
    np.testing.assert_allclose(got.data, expected, rtol=1e-4, atol=1e-6)
    # the same loss written per element (plain values in nested vmaps), grad taken outside
    per_element = jax.vmap(
        jax.vmap(lambda v: tnp.sum(fn(v, ("b", 0)) ** 2, "c"), in_axes=1, axis_name="c", out_axes=None),
        in_axes=1,
        axis_name="b",
        out_axes=None,
    )
    np.testing.assert_allclose(jax.grad(per_element)(a), expected, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# elementwise

X = data(2, 3, 4, seed=1)  # p=2, b=3, c=4
Y = data(4, 2, seed=2)  # c=4, d=2
SPECIAL_DOMAIN = {"arccosh": 1.0}  # added to inputs so they sit in the function's domain


UFUNC_CASES = [(op.name, op.source.rpartition(".")[0], op.arrays) for op in operations_of(OpKind.ELEMENTWISE)]


@pytest.mark.parametrize(("name", "module", "nin"), UFUNC_CASES, ids=[c[0] for c in UFUNC_CASES])
def test_every_ufunc_broadcasts_by_name(name, module, nin):
    fn = getattr(tnp, name)
    jfn = getattr(importlib.import_module(module), name)
    shift = SPECIAL_DOMAIN.get(name, 0.0)
    x = named(X + shift, ("b", "c"))
    y = named(Y + shift, ("c", "d"))
    if nin == 1:
        out = fn(x)
        assert out.named_shape == {"b": 3, "c": 4} and out.shape == (2,)
        expected = jfn(X + shift)
    else:
        out = fn(x, y)
        assert out.named_shape == {"b": 3, "c": 4, "d": 2} and out.shape == (2,)
        expected = jfn((X + shift)[..., None], (Y + shift)[None, None])
    np.testing.assert_allclose(laid_out(out), expected, rtol=1e-6, atol=1e-6)
    assert fn.__name__ == name and f"{module}.{name}" in fn.__doc__


@pytest.mark.parametrize("mode", MODES)
def test_ufuncs_where_clip_under_transforms(mode):
    def f(x, y):
        z = tnp.add(tnp.multiply(tnp.exp(x), y), tnp.sigmoid(y))
        z = tnp.where(tnp.greater(x, 0.5), z, tnp.negative(z))
        return tnp.clip(tnp.gelu(z, approximate=False), -1.0, 2.0)

    x4, y4 = X[..., None], Y[None, None]
    z = np.exp(x4) * y4 + jax.nn.sigmoid(y4)
    z = np.where(x4 > 0.5, z, -z)
    expected = np.clip(jax.nn.gelu(z, approximate=False), -1.0, 2.0)
    compare(f, [(X, ("b", "c")), (Y, ("c", "d"))], mode, expected, ("b", "c", "d"), rtol=1e-5, atol=1e-6)


def test_where_and_clip_accept_scalars_and_named_bounds():
    x = named(X, ("b", "c"))
    lo = named(np.full(4, 0.3, np.float32), ("c",))
    out = tnp.clip(x, lo)
    np.testing.assert_allclose(laid_out(out), np.clip(X, 0.3, None))
    np.testing.assert_allclose(laid_out(tnp.clip(x, max=0.4)), np.clip(X, None, 0.4))
    np.testing.assert_allclose(laid_out(tnp.where(x > 0.5, 1.0, 0.0)), (X > 0.5).astype(np.float32))
    assert tnp.where(jnp.array(True), 1.0, 0.0) == 1.0  # plain values: plain jnp


def test_ufunc_gradients():
    x = named(X, ("b", "c"))
    y = named(Y, ("c", "d"))

    def loss(x, y):
        return tnp.sum(tnp.tanh(tnp.multiply(x, y)), (0, "b", "c", "d")).data

    gx, gy = jax.grad(loss, argnums=(0, 1))(x, y)
    ex, ey = jax.grad(lambda a, b: jnp.sum(jnp.tanh(a[..., None] * b[None, None])), argnums=(0, 1))(X, Y)
    np.testing.assert_allclose(laid_out(gx), ex, rtol=1e-5)
    np.testing.assert_allclose(laid_out(gy), ey, rtol=1e-5)


def test_generated_functions_are_the_elementwise_rows_of_the_table():
    from typed_xmap._algebra import TNP_OPERATIONS

    elementwise = [n for n, op in TNP_OPERATIONS.items() if op.kind is OpKind.ELEMENTWISE]
    assert list(tnp.UFUNC_NAMES) == elementwise
    assert set(tnp.__all__) >= set(elementwise)


# ---------------------------------------------------------------------------------------------------------
# errors


def test_reducing_over_an_axis_the_value_lacks():
    x = named(A, A_NAMES)
    with pytest.raises(NamedShapeError) as info:
        tnp.sum(x, ("b", "zz"))
    assert str(info.value) == (
        "tnp.sum(x, axis=('b', 'zz')) reduces over axis 'zz', but x = NamedArray(float32[b=3, c=4; 2]) has named "
        "axes 'b=3 c=4'. Fix: reduce over axes the value has, or check the axis name's spelling"
    )
    with pytest.raises(ValueError, match="reduces over axis 'zz'"):  # NamedShapeError is a ValueError too
        jax.jit(lambda x: tnp.softmax(x, "zz"))(x)


UNBOUND = (
    "tnp.mean(x, axis='i'): axis 'i' is not bound by any enclosing xmap/vmap. Outside a NamedArray, a named axis "
    "is an xmap (or jax.vmap(..., axis_name='i')) level around the code. Fix: call this inside an xmap that maps "
    "'i', or pass a NamedArray that carries 'i' (tx.named(array, axes))"
)


@pytest.mark.parametrize("where", ["eager", "jit", "vmap_other_name", "make_jaxpr"])
def test_unbound_axis_name_on_a_plain_array(where):
    f = lambda v: tnp.mean(v, "i")
    run_it = {
        "eager": lambda: f(jnp.ones(3)),
        "jit": lambda: jax.jit(f)(jnp.ones(3)),
        "vmap_other_name": lambda: jax.vmap(f, axis_name="j")(jnp.ones((2, 3))),
        "make_jaxpr": lambda: jax.make_jaxpr(f)(jnp.ones(3)),
    }[where]
    with pytest.raises(tnp.UnboundAxisError) as info:
        run_it()
    assert str(info.value) == UNBOUND
    assert isinstance(info.value, NameError) and isinstance(info.value, NamedShapeError)


def test_unbound_mapped_axis_of_a_named_array():
    x = wrap(jnp.ones(3), (), (("i", 4),))  # claims a vmap level that is not there
    with pytest.raises(tnp.UnboundAxisError, match="axis 'i' is not bound by any enclosing xmap/vmap"):
        tnp.sum(x, "i")


def test_axis_argument_errors():
    x = named(A, A_NAMES)
    with pytest.raises(NamedShapeError, match=r"positional axis 1 is out of range for a value with 1 positional dims"):
        tnp.sum(x, 1)
    with pytest.raises(NamedShapeError, match="listed twice"):
        tnp.sum(x, ("b", "b"))
    with pytest.raises(NamedShapeError, match="repeats a dim"):
        tnp.sum(x, (0, -1))
    with pytest.raises(NamedShapeError, match=r"an axis is a name \(str\) or a positional dim \(int\), got 1.5"):
        tnp.max(x, 1.5)
    with pytest.raises(NamedShapeError, match="argmax reduces over one axis, got 2"):
        tnp.argmax(x, ("b", "c"))


def test_elementwise_size_clash_names_the_function():
    with pytest.raises(NamedShapeError, match=r"axis 'c' has size 4 in x1 .* but size 3 in x2 .* in tnp.add"):
        tnp.add(named(X, ("b", "c")), named(data(3), ("c",)))
    with pytest.raises(TypeError, match=r"tnp\.exp takes 1 array argument, got 2"):
        tnp.exp(1.0, 2.0)


# -- eager fusion and cached plans (issue 11) ---------------------------------------------------------------


def test_eager_calls_fuse_into_one_cached_jit_per_op_and_layout():
    from typed_xmap._value import _layout

    x, b = named(data(3, 4, 5), ["batch", "out"]), named(data(5, seed=1), ["out"])
    want = np.asarray(x.data) + np.asarray(b.data)[None, None, :]
    for _ in range(3):  # the miss, then the cached jit
        got = x + b
        assert got.axes == ("batch", "out") and np.allclose(got.data, want)
    assert _layout._FUSED  # one jit per (op, layouts)
    traced = jax.jit(lambda x, b: (x + b).data)(x, b)  # under a trace the ops are emitted directly
    np.testing.assert_allclose(traced, want, rtol=1e-6)
    for keepdims in (False, True, True):
        s = tnp.sum(x, ("batch", 0), keepdims=keepdims)
        assert s.shape == ((1,) if keepdims else ()) and s.axes == ("out",)
        np.testing.assert_allclose(np.ravel(s.data), np.asarray(x.data).sum((0, 1)), rtol=1e-5)
    for _ in range(2):
        sm = tnp.softmax(x, "out")
        np.testing.assert_allclose(np.asarray(sm.data).sum(-1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(sm.data, jax.nn.softmax(x.data, axis=-1), rtol=1e-5)


def test_cached_layouts_still_raise_for_a_clash_and_a_missing_axis():
    x, b = named(data(2, 3), ["batch", "out"]), named(data(4), ["out"])
    ok = named(data(3), ["out"])
    for _ in range(2):
        x + ok  # warm the caches with a good layout
        with pytest.raises(NamedShapeError, match="axis 'out' has size 3"):
            x + b
        tnp.sum(x, "batch")
        with pytest.raises(NamedShapeError, match=r"reduces over axis 'feat', but x = NamedArray"):
            tnp.sum(x, "feat")


def test_ufunc_keywords_and_clip_do_not_grow_the_fused_cache():
    from typed_xmap._value import _layout

    x, b = named(data(2, 3), ["batch", "out"]), named(data(3), ["out"])
    tnp.round(x, decimals=2)
    before = len(_layout._FUSED)
    for _ in range(5):
        tnp.round(x * b, decimals=2)
        tnp.clip(x, b, 0.5)
    assert len(_layout._FUSED) <= before + 1  # x * b only
    np.testing.assert_allclose(tnp.clip(x, b, 0.5).data, np.clip(x.data, b.data[None], 0.5))


def test_argmax_plans_are_cached_once_per_function():
    from typed_xmap._ops._tnp import _reductions

    x = named(data(4, 5), ["batch", "out"])
    tnp.argmax(x, "out")
    before = len(_reductions._PLANS)
    for _ in range(5):
        assert tnp.argmax(x, "out").axes == ("batch",)
    assert len(_reductions._PLANS) == before


# -- segment reductions by name --------------------------------------------------------------------------------

SEGMENT_DATA = jnp.arange(24.0).reshape(6, 4)
SEGMENT_IDS = jnp.array([0, 2, 0, 1, 2, 2])


@pytest.mark.parametrize(
    ("name", "reference"), [("segment_sum", jax.ops.segment_sum), ("segment_max", jax.ops.segment_max)]
)
def test_segment_reductions_match_jax_ops(name, reference):
    """``axis`` is replaced by ``new_axis`` of size ``num_segments``; ids as a NamedArray or a 1-d array."""
    data = tx.named(SEGMENT_DATA, ["edge", "feature"])
    for ids in (tx.named(SEGMENT_IDS, ["edge"]), SEGMENT_IDS):
        result = getattr(tnp, name)(data, ids, 4, axis="edge", new_axis="node")
        assert result.named_shape == {"feature": 4, "node": 4}
        np.testing.assert_array_equal(
            tx.positional(result, ["node", "feature"]), reference(SEGMENT_DATA, SEGMENT_IDS, 4)
        )


def test_segment_sum_inside_xmap_over_graphs_and_over_the_edge_axis():
    """Per graph inside an xmap (NamedArrays beside a mapped axis), and with ``edge`` itself the xmap axis (the
    per-element values are gathered along it, as a reduction over a mapped axis is)."""
    data, ids = jnp.arange(48.0).reshape(2, 6, 4), jnp.array([[0, 2, 0, 1, 2, 2], [1, 1, 0, 0, 2, 0]])

    def per_graph(m, d):
        summed = tnp.segment_sum(
            tx.named(m, ["edge", "feature"]), tx.named(d, ["edge"]), 3, axis="edge", new_axis="node"
        )
        return tx.positional(summed, ["node", "feature"])

    graphs = tx.xmap(per_graph, in_axes=[{0: "graph"}, {0: "graph"}], out_axes={0: "graph"})(data, ids)
    np.testing.assert_array_equal(graphs, jax.vmap(lambda m, d: jax.ops.segment_sum(m, d, 3))(data, ids))
    over_edges = tx.xmap(
        lambda m, d: tnp.segment_sum(m, d, 3, axis="edge", new_axis="node"),
        in_axes=[{0: "edge"}, {0: "edge"}],
        out_axes=[...],
    )(SEGMENT_DATA, SEGMENT_IDS)
    np.testing.assert_array_equal(over_edges, jax.ops.segment_sum(SEGMENT_DATA, SEGMENT_IDS, 3).T)


def test_segment_sum_of_a_sharded_value_under_jit():
    """A value split over Explicit mesh axes (edge and feature) is summed whole: the values of one device."""
    with jax.set_mesh(tx.fitting_mesh((4, 2), ("x", "y"))):
        data = tx.shard(tx.named(SEGMENT_DATA, ["edge", "feature"]), {"feature": "x", "edge": "y"})
        summed = jax.jit(
            lambda v: tnp.segment_sum(v, tx.named(SEGMENT_IDS, ["edge"]), 3, axis="edge", new_axis="node")
        )(data)
    np.testing.assert_array_equal(
        tx.positional(summed, ["node", "feature"]), jax.ops.segment_sum(SEGMENT_DATA, SEGMENT_IDS, 3)
    )


def test_segment_sum_is_differentiable_by_name():
    data = tx.named(SEGMENT_DATA, ["edge", "feature"])
    grad = jax.grad(
        lambda v: tx.positional(
            tnp.sum(tnp.segment_sum(v, SEGMENT_IDS, 3, axis="edge", new_axis="node") ** 2, ("node", "feature")), []
        )
    )(data)
    expected = jax.grad(lambda m: jnp.sum(jax.ops.segment_sum(m, SEGMENT_IDS, 3) ** 2))(SEGMENT_DATA)
    np.testing.assert_allclose(tx.positional(grad, ["edge", "feature"]), expected)
