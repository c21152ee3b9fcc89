"""Property test: random in/out specs, sizes and resources vs a NumPy reference."""

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
from jax import lax
from jax.sharding import AxisType

from typed_xmap import xmap

NAMES = ("a", "b", "c")
MESH_SIZES = {"x": 4, "y": 2}


@st.composite
def cases(draw):
    count = draw(st.integers(1, 3))
    names = NAMES[:count]
    sizes = {n: draw(st.sampled_from([2, 4])) for n in names}
    positional = draw(st.integers(0, 1))
    # input layout: a permutation of the named dims and the positional dims
    layout = draw(st.permutations(list(names) + [None] * positional))
    reduced = draw(st.lists(st.sampled_from(names), unique=True, max_size=count))
    carried = [n for n in names if n not in reduced]
    broadcast = [n for n in reduced if draw(st.booleans())]
    listed = carried + broadcast
    out_rank = len(listed) + positional
    positions = draw(st.permutations(range(out_rank)))[: len(listed)]
    out_spec = dict(zip(positions, listed, strict=False))
    resources = {}
    free = dict(MESH_SIZES)
    for n in names:
        choice = draw(st.sampled_from([None, *sorted(free)]))
        if choice is not None and sizes[n] % free[choice] == 0:
            resources[n] = choice
            del free[choice]
    use_mesh = draw(st.booleans()) or bool(resources)
    explicit = draw(st.booleans())
    return sizes, layout, reduced, out_spec, resources, use_mesh, explicit


def reference(data, layout, sizes, reduced, out_spec, positional):
    names = [n for n in layout if n is not None]
    order = [layout.index(n) for n in names] + [i for i, n in enumerate(layout) if n is None]
    canon = np.transpose(data, order) * 2 + 1  # dims: names..., positional...
    for n in reduced:
        axis = names.index(n)
        canon = canon.sum(axis=axis)
        names.remove(n)
    for n in out_spec.values():  # broadcast listed axes the value lacks
        if n not in names:
            canon = np.broadcast_to(canon[None], (sizes[n], *canon.shape))
            names.insert(0, n)
    rank = len(out_spec) + positional
    result_dims = [None] * rank
    for pos, n in out_spec.items():
        result_dims[pos] = names.index(n)
    rest = iter(range(len(names), len(names) + positional))
    perm = [d if d is not None else next(rest) for d in result_dims]
    return np.transpose(canon, perm)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_specs_match_numpy(case):
    sizes, layout, reduced, out_spec, resources, use_mesh, explicit = case
    positional = layout.count(None)
    shape = tuple(3 if n is None else sizes[n] for n in layout)
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    in_spec = {i: n for i, n in enumerate(layout) if n is not None}

    def body(v):
        v = v * 2 + 1
        return lax.psum(v, tuple(reduced)) if reduced else v

    f = xmap(body, in_axes=(in_spec,), out_axes=out_spec, axis_resources=resources)
    expected = reference(data, list(layout), sizes, reduced, out_spec, positional)
    if use_mesh:
        kind = AxisType.Explicit if explicit else AxisType.Auto
        mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(kind, kind))
        with jax.set_mesh(mesh):
            out = f(data)
    else:
        out = f(data)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)
