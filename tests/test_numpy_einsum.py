"""typed_xmap.numpy einsum and dot: values against numpy.einsum on every path (NamedArray eager/jit/vmap/mapped,
plain per element in nested vmaps), gradients, one dot_general per named contraction (jaxpr and compiled HLO),
Explicit and Auto meshes, and a hypothesis property test on random specs."""

import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
from test_numpy import MODES, compare, data, laid_out, named

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedShapeError
from typed_xmap._value._named_array import NamedArray, wrap


def split_operand(text):
    """'n{b,k}' -> ('n', ['b', 'k'])."""
    letters = re.sub(r"\{.*\}", "", text)
    inner = re.search(r"\{(.*)\}", text)
    return letters, [n for n in (inner.group(1).split(",") if inner else []) if n]


def np_reference(spec, inputs):
    """numpy.einsum on the same data laid out positionally; the result laid out as output letters + named
    axes sorted by name (the output's braces plus carried names, i.e. names the spec never mentions)."""
    lhs, rhs = spec.split("->")
    operands = [split_operand(t) for t in re.split(r",(?![^{]*\})", lhs)]
    out_letters, out_names = split_operand(rhs)
    mentioned = {n for _, ns in operands for n in ns}
    carried = {n for _, ns in inputs for n in ns if n not in mentioned}
    result_names = sorted(set(out_names) | carried)
    upper = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    letter = {n: next(upper) for n in sorted({n for _, ns in inputs for n in ns})}
    terms = [lt + "".join(letter[n] for n in ns) for (lt, _), (_, ns) in zip(operands, inputs, strict=False)]
    subscripts = ",".join(terms) + "->" + out_letters + "".join(letter[n] for n in result_names)
    return np.einsum(subscripts, *[a for a, _ in inputs]), tuple(result_names)


def inputs_for(shapes):
    """[(shape, names)] -> [(array, names)] with distinct data per operand."""
    return [(data(*shape, seed=10 * i), tuple(names)) for i, (shape, names) in enumerate(shapes)]


CASES = {  # spec: operands as (shape = positional + named dims, named axes)
    "vector dot": ("{i},{i}->{}", [((5,), "i"), ((5,), "i")]),
    "matvec": ("{i},{i,o}->{o}", [((5,), "i"), ((5, 3), "io")]),
    "matmul mixed": ("n{b,k},{k,m}->n{b,m}", [((2, 3, 4), "bk"), ((4, 5), "km")]),
    "permuted braces": ("{m,k},n{k,b}->n{m,b}", [((4, 5), "km"), ((2, 3, 4), "bk")]),
    "positional outer": ("a{i},b{i}->ab", [((2, 5), "i"), ((3, 5), "i")]),
    "summed in one": ("{i,j},{j}->{}", [((5, 2), "ij"), ((2,), "j")]),
    "named outer": ("{i},{j}->{i,j}", [((5,), "i"), ((2,), "j")]),
    "unary mixed": ("jk{i,b}->k{b}", [((2, 4, 5, 3), "ib")]),
    "three operands": ("{i},{i,j},{j}->{}", [((5,), "i"), ((5, 2), "ij"), ((2,), "j")]),
    "carried one side": ("{i},{i}->{}", [((5, 2), "ic"), ((5,), "i")]),
    "carried both (batch)": ("{i},{i}->{}", [((2, 5), "ci"), ((5, 2), "ic")]),
    "kept product": ("{i},{i}->{i}", [((5,), "i"), ((5,), "i")]),
}


def mapped_name(shapes):
    return shapes[0][1][0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
def test_einsum_matches_numpy(case, mode):
    spec, shapes = CASES[case]
    inputs = inputs_for(shapes)
    expected, names = np_reference(spec, inputs)
    compare(
        lambda *xs: tnp.einsum(spec, *xs),
        inputs,
        mode,
        expected,
        names,
        mapped=mapped_name(shapes),
        rtol=1e-5,
        atol=1e-6,
    )


# ---------------------------------------------------------------------------------------------------------
# property test


@st.composite
def einsum_problems(draw):
    sizes = {n: draw(st.integers(1, 3)) for n in "ijkl"}
    letter_sizes = {c: draw(st.integers(1, 3)) for c in "abc"}
    count = draw(st.integers(1, 3))
    operands = []
    for _ in range(count):
        letters = "".join(draw(st.permutations("abc")))[: draw(st.integers(0, 2))]
        names = draw(st.lists(st.sampled_from("ijkl"), unique=True, max_size=3))
        extra = draw(st.lists(st.sampled_from("pq"), unique=True, max_size=1))  # carried: never in the spec
        operands.append((letters, names, extra))
    all_letters = sorted({c for lt, _, _ in operands for c in lt})
    all_names = sorted({n for _, ns, _ in operands for n in ns})
    out_letters = "".join(draw(st.permutations(all_letters)))[: draw(st.integers(0, len(all_letters)))]
    out_names = draw(st.lists(st.sampled_from(all_names), unique=True)) if all_names else []
    spec = ",".join(lt + ("{" + ",".join(ns) + "}" if ns or draw(st.booleans()) else "") for lt, ns, _ in operands)
    spec += "->" + out_letters + ("{" + ",".join(out_names) + "}" if out_names else "")
    carried_sizes = {"p": 2, "q": 3}
    inputs = []
    for index, (letters, names, extra) in enumerate(operands):
        axes = tuple(draw(st.permutations(names + extra)))
        shape = [letter_sizes[c] for c in letters] + [sizes.get(n) or carried_sizes[n] for n in axes]
        inputs.append((np.random.default_rng(index).normal(size=shape).astype(np.float32), axes))
    return spec, inputs


@settings(max_examples=60, deadline=None)
@given(einsum_problems())
def test_property_brace_einsum_agrees_with_numpy(problem):
    spec, inputs = problem
    expected, names = np_reference(spec, inputs)
    compare(lambda *xs: tnp.einsum(spec, *xs), inputs, "eager", expected, names, rtol=1e-4, atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(einsum_problems(), st.integers(0, 3))
def test_property_brace_einsum_with_a_mapped_axis(problem, pick):
    """The same, with one named axis held by a vmap level (a typed xmap body): jit(vmap(...)) per example."""
    spec, inputs = problem
    names = sorted({n for _, ns in inputs for n in ns})
    if not names:
        return
    expected, result_names = np_reference(spec, inputs)
    compare(
        lambda *xs: tnp.einsum(spec, *xs),
        inputs,
        "mapped",
        expected,
        result_names,
        mapped=names[pick % len(names)],
        rtol=1e-4,
        atol=1e-5,
    )


def test_einsum_axis_held_as_a_dim_by_one_operand_and_mapped_in_another():
    a, m, v = data(5, seed=1), data(5, 3, seed=2), data(3, seed=3)
    w = named(m, ("i", "o"))  # holds 'i' and 'o' in its data (e.g. a closure inside xmap)

    def contracted(ai):  # 'i' mapped in x, a dim of w: contracted by one dot
        return tnp.einsum("{i},{i,o}->{o}", wrap(ai, (), (("i", 5),)), w).data

    out = jax.vmap(contracted, axis_name="i", out_axes=None)(a)
    np.testing.assert_allclose(out, a @ m, rtol=1e-5)

    def kept(mo):  # 'o' mapped in the first operand, a dim of the second: the result keeps it mapped
        r = tnp.einsum("{i,o},{o}->{o}", wrap(mo, ("i",), (("o", 3),)), named(v, ("o",)))
        assert r.axes == () and r.mapped == (("o", 3),)
        return r.data

    out = jax.vmap(kept, axis_name="o")(m.T)
    np.testing.assert_allclose(out, np.einsum("io,o->o", m, v), rtol=1e-5)

    # a plain per-element operand next to a NamedArray: its braces give its (mapped) axes
    mixed = jax.vmap(lambda ai: tnp.einsum("{i},{i,o}->{o}", ai, w).data, axis_name="i", out_axes=None)(a)
    np.testing.assert_allclose(mixed, a @ m, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# dot


def test_dot_positional_per_named_element():
    a, b = data(3, 4, 2), data(4, 5, 6)  # x: positional (3, 4), named c; y: positional (4, 5), named d
    x, y = named(a, ("c",)), named(b, ("d",))
    out = tnp.dot(x, y)
    assert out.shape == (3, 5) and out.named_shape == {"c": 2, "d": 6}
    np.testing.assert_allclose(tx.positional(out, {2: "c", 3: "d"}), np.einsum("ijc,jkd->ikcd", a, b), rtol=1e-5)
    v = named(data(4, 2), ("c",))  # shared named axis: one value per element of c
    np.testing.assert_allclose(tnp.dot(x, v).data, np.einsum("ijc,jc->ic", a, data(4, 2)), rtol=1e-5)
    np.testing.assert_allclose(tnp.dot(x, 2.0).data, 2 * a)
    np.testing.assert_allclose(tnp.dot(jnp.ones(3), jnp.ones(3)), 3.0)  # plain arrays: jnp.dot


@pytest.mark.parametrize("mode", ["eager", "jit", "mapped", "plain"])
def test_dot_over_named_axes(mode):
    inputs = inputs_for([((2, 5, 3), "ik"), ((4, 3, 5), "ki")])
    expected = np.einsum("aik,bki->ab", inputs[0][0], inputs[1][0])
    compare(lambda x, y: tnp.dot(x, y, axis=("i", "k")), inputs, mode, expected, (), mapped="i", rtol=1e-5)
    expected = np.einsum("aik,bki->abk", inputs[0][0], inputs[1][0])
    compare(lambda x, y: tnp.dot(x, y, axis="i"), inputs, mode, expected, ("k",), mapped="i", rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# gradients, the regression loss, one dot_general

B, IN, OUT = 16, 32, 24
XS, WS, YS = data(B, IN, seed=1), data(IN, OUT, seed=2), data(B, OUT, seed=3)


def loss_ref(x, w, y):
    return jnp.mean(jnp.sum((jnp.einsum("bi,io->bo", x, w) - y) ** 2, axis=1))


def loss_named(x, w, y):
    """The regression loss on NamedArrays: mean_batch(sum_out((einsum_in(x, w) - y)^2))."""
    return tnp.mean(tnp.sum((tnp.einsum("{in},{in,out}->{out}", x, w) - y) ** 2, "out"), "batch")


def per_element(body, order=("batch", "in", "out"), out=("batch", "out"), resources=None):
    """``body(xe, we, ye)`` per element in nested vmaps, ``order[0]`` outermost (the untyped xmap body).

    Named axes of x: batch, in; w: in, out; y: batch, out. The result is laid out as the names of ``out``
    in ``order``; ``resources`` maps a name to its mesh axis (``spmd_axis_name``).
    """
    dims = (("batch", "in"), ("in", "out"), ("batch", "out"))
    resources = resources or {}

    def wrapped(x, w, y):
        f = body
        for name in reversed(order):
            f = jax.vmap(
                f,
                in_axes=tuple(0 if name in d else None for d in dims),
                axis_name=name,
                spmd_axis_name=resources.get(name),
                out_axes=0 if name in out else None,
            )
        moved = [jnp.transpose(a, [d.index(n) for n in order if n in d]) for a, d in zip((x, w, y), dims, strict=False)]
        return f(*moved)

    return wrapped


def test_regression_loss_named_arrays_values_and_gradients():
    x, w, y = named(XS, ("batch", "in")), named(WS, ("in", "out")), named(YS, ("batch", "out"))
    value, grads = jax.jit(jax.value_and_grad(lambda x, w, y: loss_named(x, w, y).data, argnums=(0, 1)))(x, w, y)
    ref_value, ref_grads = jax.value_and_grad(loss_ref, argnums=(0, 1))(XS, WS, YS)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5)
    np.testing.assert_allclose(grads[0].data, ref_grads[0], rtol=1e-4)
    np.testing.assert_allclose(tx.positional(grads[1], ["in", "out"]), ref_grads[1], rtol=1e-4)


def test_regression_loss_per_element_values_and_gradients():
    """The untyped xmap body: plain per-element values; the batch mean and out sum are collectives."""

    def body(xe, we, ye):
        err = tnp.einsum("{in},{in,out}->{out}", xe, we) - ye
        return tnp.mean(tnp.sum(err**2, "out"), "batch")

    f = per_element(body, out=())
    value, grads = jax.jit(jax.value_and_grad(f, argnums=(0, 1)))(XS, WS, YS)
    ref_value, ref_grads = jax.value_and_grad(loss_ref, argnums=(0, 1))(XS, WS, YS)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5)
    np.testing.assert_allclose(grads[0], ref_grads[0], rtol=1e-4)
    np.testing.assert_allclose(grads[1], ref_grads[1], rtol=1e-4)


RANK3 = re.compile(r"\b(?:f32|f64|bf16|f16)\[\d+,\d+,\d+")


def assert_one_matmul(compiled_text):
    assert re.search(r"\bdot\(", compiled_text), "no dot in the compiled HLO"
    assert not RANK3.search(compiled_text), f"a rank-3 intermediate: {RANK3.search(compiled_text).group()}"


def _matmul_bodies():
    def plain(xe, we):
        return tnp.einsum("{in},{in,out}->{out}", xe, we)

    def typed(xe, we):  # a typed xmap body: every named axis mapped
        x = wrap(xe, (), (("batch", B), ("in", IN)))
        w = wrap(we, (), (("in", IN), ("out", OUT)))
        return tnp.einsum("{in},{in,out}->{out}", x, w).data

    return {"plain": plain, "typed": typed}


def primitives(jaxpr):
    """The primitives of ``jaxpr``, those of the ``jit``s it calls in their place."""
    names = []
    for e in jaxpr.eqns:
        names += primitives(e.params["jaxpr"].jaxpr) if e.primitive.name == "jit" else [e.primitive.name]
    return names


@pytest.mark.parametrize("order", list(itertools.permutations(("batch", "in", "out"))), ids="-".join)
@pytest.mark.parametrize("path", ["plain", "typed"])
def test_named_contraction_is_one_dot_general(path, order):
    body = _matmul_bodies()[path]
    f = per_element(lambda x, w, y: body(x, w), order=order)
    prims = primitives(jax.make_jaxpr(f)(XS, WS, YS).jaxpr)
    assert prims.count("dot_general") == 1 and not {"mul", "reduce_sum", "all_gather"} & set(prims), prims
    compiled = jax.jit(f).lower(XS, WS, YS).compile().as_text()
    assert_one_matmul(compiled)
    expected = XS @ WS if order.index("batch") < order.index("out") else (XS @ WS).T
    np.testing.assert_allclose(jax.jit(f)(XS, WS, YS), expected, rtol=1e-5)


def test_named_array_contraction_hlo_and_gradient_hlo():
    x, w = named(XS, ("batch", "in")), named(WS, ("in", "out"))
    f = jax.jit(lambda x, w: tnp.einsum("{in},{in,out}->{out}", x, w))
    assert_one_matmul(f.lower(x, w).compile().as_text())
    y = named(YS, ("batch", "out"))
    g = jax.jit(jax.grad(lambda x, w: loss_named(x, w, y).data, argnums=(0, 1)))
    text = g.lower(x, w).compile().as_text()
    assert len(re.findall(r"\bdot\(", text)) >= 2 and not RANK3.search(text)


# ---------------------------------------------------------------------------------------------------------
# meshes


ASSIGNMENTS = [{"batch": "x"}, {"in": "x"}, {"out": "x"}, {"in": "x", "out": "y"}, {"batch": "y", "in": "x"}]
ORDERS = [("batch", "in", "out"), ("out", "in", "batch"), ("in", "batch", "out")]


def mesh_of(kind):
    types = (AxisType.Explicit,) * 2 if kind == "explicit" else (AxisType.Auto,) * 2
    return jax.make_mesh((4, 2), ("x", "y"), axis_types=types)


def sharding(mesh, names, resources):
    return NamedSharding(mesh, P(*(resources.get(n) for n in names)))


def placed(mesh, array, names, resources):
    """A NamedArray (named dims = all dims) whose data is sharded by name."""
    return named(jax.device_put(array, sharding(mesh, names, resources)), names)


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
@pytest.mark.parametrize("resources", ASSIGNMENTS, ids=lambda r: ",".join(f"{k}>{v}" for k, v in r.items()))
@pytest.mark.parametrize("kind", ["explicit", "auto"])
def test_per_element_contraction_on_meshes(kind, resources, order):
    mesh = mesh_of(kind)
    path = "typed" if order == ORDERS[0] else "plain"
    body = _matmul_bodies()[path]

    def loss(x, w, y):
        return per_element(
            lambda xe, we, ye: tnp.sum((body(xe, we) - ye) ** 2, ("batch", "out")),
            order=order,
            out=(),
            resources=resources,
        )(x, w, y)

    f = per_element(lambda x, w, y: body(x, w), order=order, resources=resources)
    with jax.set_mesh(mesh):
        shardings = tuple(sharding(mesh, n, resources) for n in (("batch", "in"), ("in", "out"), ("batch", "out")))
        args = [jax.device_put(a, s) for a, s in zip((XS, WS, YS), shardings, strict=False)]
        both = jax.jit(lambda x, w, y: (f(x, w, y), jax.grad(loss, argnums=(0, 1))(x, w, y)))
        out, (gx, gw) = both(*args)
        text = both.lower(*args).compile().as_text()
    expected = XS @ WS if order.index("batch") < order.index("out") else (XS @ WS).T
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    ref = jax.grad(lambda x, w: jnp.sum((x @ w - YS) ** 2), argnums=(0, 1))(XS, WS)
    np.testing.assert_allclose(gx, ref[0], rtol=1e-4)
    np.testing.assert_allclose(gw, ref[1], rtol=1e-4)
    assert re.search(r"\bdot\(", text) and not RANK3.search(text)


@pytest.mark.parametrize(
    "resources",
    [{"in": "x"}, {"batch": "x", "out": "y"}, {"in": "x", "out": "y"}],
    ids=lambda r: ",".join(f"{k}>{v}" for k, v in r.items()),
)
@pytest.mark.parametrize("kind", ["explicit", "auto"])
def test_named_array_contraction_on_meshes(kind, resources):
    """NamedArrays whose named dims are sharded: a contraction over a sharded dim on an Explicit
    mesh needs the out_sharding fix."""
    mesh = mesh_of(kind)
    with jax.set_mesh(mesh):
        x, w, y = (
            placed(mesh, a, names, resources)
            for a, names in ((XS, ("batch", "in")), (WS, ("in", "out")), (YS, ("batch", "out")))
        )
        f = jax.jit(jax.value_and_grad(lambda x, w: loss_named(x, w, y).data, argnums=(0, 1)))
        value, (gx, gw) = f(x, w)
        text = f.lower(x, w).compile().as_text()
    ref_value, ref_grads = jax.value_and_grad(loss_ref, argnums=(0, 1))(XS, WS, YS)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5)
    np.testing.assert_allclose(tx.positional(gx, ["batch", "in"]), ref_grads[0], rtol=1e-4)
    np.testing.assert_allclose(tx.positional(gw, ["in", "out"]), ref_grads[1], rtol=1e-4)
    assert re.search(r"\bdot\(", text)


@pytest.mark.parametrize("kind", ["explicit", "auto"])
def test_per_element_reductions_on_meshes(kind):
    """softmax, prod and argmax over a named axis sharded by spmd_axis_name (gathered, then reduced)."""
    a = data(8, 4, seed=5)

    def body(v):
        return tnp.softmax(v, "b"), tnp.prod(v, "b"), tnp.argmax(v, "b"), tnp.var(v, ("b", "f"))

    f = jax.vmap(
        jax.vmap(body, axis_name="f", spmd_axis_name="y"),
        axis_name="b",
        spmd_axis_name="x",
        out_axes=(0, None, None, None),
    )
    mesh = mesh_of(kind)
    with jax.set_mesh(mesh):
        sm, pr, am, va = jax.jit(f)(jax.device_put(a, NamedSharding(mesh, P("x", "y"))))
    np.testing.assert_allclose(sm, np.exp(a) / np.exp(a).sum(0), rtol=1e-5)
    np.testing.assert_allclose(pr, a.prod(0), rtol=1e-5)
    np.testing.assert_array_equal(am, a.argmax(0))
    np.testing.assert_allclose(va, np.broadcast_to(a.var(), (4,)), rtol=1e-4)


def test_three_operand_einsum_on_an_explicit_mesh():
    a, b, c = data(8, seed=1), data(8, 6, seed=2), data(6, seed=3)
    mesh = mesh_of("explicit")
    resources = {"i": "x", "j": "y"}
    with jax.set_mesh(mesh):
        args = [
            placed(mesh, a, ("i",), resources),
            placed(mesh, b, ("i", "j"), resources),
            placed(mesh, c, ("j",), resources),
        ]
        out = jax.jit(lambda *v: tnp.einsum("{i},{i,j},{j}->{}", *v))(*args)
    np.testing.assert_allclose(out.data, np.einsum("i,ij,j->", a, b, c), rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------
# errors


def test_einsum_errors():
    x = named(data(5), ("i",))
    with pytest.raises(NamedShapeError, match="has 2 operand specs but was given 1 operand"):
        tnp.einsum("{i},{i}->{}", x)
    with pytest.raises(NamedShapeError) as info:
        tnp.einsum("{i},{j}->{}", x, x)
    assert str(info.value) == (
        "einsum '{i},{j}->{}': operand 1 has named axes 'i' and lacks 'j', which its braces list. "
        "Fix: pass a value with those axes, or drop them from its braces"
    )
    with pytest.raises(NamedShapeError, match="the output names axes 'k' that no operand mentions"):
        tnp.einsum("{i},{i}->{k}", x, x)
    with pytest.raises(tnp.UnboundAxisError, match=r"tnp.einsum\('\{i\},\{i\}->\{\}'\): axis 'i' is not bound"):
        tnp.einsum("{i},{i}->{}", jnp.ones(5), jnp.ones(5))  # plain arrays outside any vmap
    with pytest.raises(NamedShapeError, match="axis 'i' has size 5 in operand 0"):
        tnp.einsum("{i},{i}->{}", x, named(data(4), ("i",)))
    with pytest.raises(TypeError, match="ambiguous for NamedArrays"):
        x @ x


def test_a_plan_cached_for_one_layout_checks_every_other():
    """The plan of a checked einsum is kept per (spec, axes, shape): the same layouts reuse it (same values, in
    and out of ``jit``), and any other layout is checked anew (its error raised, not the cached plan used)."""
    spec = "{i,j},{j,k}->{i,k}"
    x, w = named(data(2, 3), ("i", "j")), named(data(3, 4), ("j", "k"))
    first = tnp.einsum(spec, x, w)
    again = tnp.einsum(spec, x, w)
    traced = jax.jit(lambda a, b: tnp.einsum(spec, a, b))(x, w)
    expected = np.einsum("ij,jk->ik", x.data, w.data)
    for value in (first, again, traced):
        assert value.named_shape == {"i": 2, "k": 4}
        np.testing.assert_allclose(tx.positional(value, ["i", "k"]), expected, rtol=1e-6)
    with pytest.raises(NamedShapeError, match="axis 'j' has size 3 in operand 0"):
        tnp.einsum(spec, x, named(data(4, 4), ("j", "k")))
    transposed = tnp.einsum(spec, wrap(x.data.T, ("j", "i")), w)  # another layout: another plan
    np.testing.assert_allclose(tx.positional(transposed, ["i", "k"]), expected, rtol=1e-6)


def test_outputs_are_named_arrays_iff_an_operand_is():
    x = named(data(5), ("i",))
    assert isinstance(tnp.einsum("{i},{i}->{}", x, x), NamedArray)
    plain = jax.vmap(lambda v: tnp.einsum("{i},{i}->{}", v, v), axis_name="i", out_axes=None)(jnp.arange(3.0))
    assert not isinstance(plain, NamedArray) and plain == 5.0


@pytest.mark.parametrize(
    ("spec", "shapes", "direct"),
    [
        ("s{e},{e,h}->s{h}", [((5, 3), ("e",)), ((3, 4), ("e", "h"))], True),  # contraction, kept positional
        ("{s,d},{k,d}->{s,k}", [((3, 2), ("d", "s")), ((4, 3), ("k", "d"))], True),  # batch-free
        ("{d},{d}->", [((2, 3), ("b", "d")), ((3,), ("d",))], True),  # carried batch axis b
        ("{e},{h}->{h}", [((2,), ("e",)), ((3,), ("h",))], False),  # e summed alone first: jnp.einsum
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_pair_contraction_traces_to_one_dot_general(spec, shapes, direct):
    """Two operands that are one ``dot_general`` trace to it alone, under the one cached ``jit`` per spec
    (which lets ``jax.grad`` reuse its derivative); ``jnp.einsum`` would add its own ops and inner ``jit``."""
    arrays = [data(*shape) for shape, _ in shapes]
    xs = [named(a, names) for a, (_, names) in zip(arrays, shapes, strict=True)]
    got = tnp.einsum(spec, *xs)
    expected = np_reference(spec, [(a, names) for a, (_, names) in zip(arrays, shapes, strict=True)])
    assert sorted(got.axes) == list(expected[1])  # by name: the layout is the dot_general's
    np.testing.assert_allclose(laid_out(got), expected[0], rtol=1e-5, atol=1e-5)
    outer = jax.make_jaxpr(lambda *v: tnp.einsum(spec, *v).data)(*xs).jaxpr
    assert [e.primitive.name for e in outer.eqns] == ["jit"]
    prims = [e.primitive.name for e in outer.eqns[0].params["jaxpr"].jaxpr.eqns]
    assert (prims[0] == "dot_general" and set(prims) <= {"dot_general", "transpose"}) is direct, prims
