"""The brace einsum spec: parsing, errors, and results against an independent NumPy reference."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from typed_xmap import NamedShapeError, NamedShapeSyntaxError
from typed_xmap._algebra import einsum_result, parse_einsum, positional_einsum


def test_parses_the_original_forms():
    spec = parse_einsum("n{b,k},{k,m}->n{b,m}")
    assert [(op.letters, op.names) for op in spec.inputs] == [("n", ("b", "k")), ("", ("k", "m"))]
    assert (spec.output.letters, spec.output.names) == ("n", ("b", "m"))
    assert spec.contracted == ("k",)
    assert parse_einsum("{in_features},{in_features}->{}").contracted == ("in_features",)


def test_result_shape_carries_unmentioned_axes():
    spec = parse_einsum("{in},{in,out}->{out}")
    result = einsum_result(spec, [{"batch": 8, "in": 4}, {"in": 4, "out": 3}], [(), ()])
    assert result.named_shape == {"out": 3, "batch": 8}
    assert (result.contracted, result.summed, result.carried) == (("in",), (), ("batch",))


def test_output_axis_no_operand_mentions():
    with pytest.raises(NamedShapeError) as info:
        parse_einsum("{a},{a}->{j}")
    assert str(info.value) == (
        "einsum '{a},{a}->{j}': the output names axes 'j' that no operand mentions. Fix: mention them in "
        "an operand's braces, or drop them from the output"
    )


def test_unterminated_brace_points_at_it():
    with pytest.raises(NamedShapeSyntaxError) as info:
        parse_einsum("{a,b},{c->{a}")
    assert str(info.value).splitlines()[1:3] == ["    {a,b},{c->{a}", "          ^^"]


def test_operand_lacking_a_listed_axis():
    spec = parse_einsum("{in},{in,out}->{out}")
    with pytest.raises(NamedShapeError) as info:
        einsum_result(spec, [{"batch": 8}, {"in": 4, "out": 3}], [(), ()], operands=["x", "w"])
    assert str(info.value) == (
        "einsum '{in},{in,out}->{out}': x has named axes 'batch' and lacks 'in', which its braces list. "
        "Fix: pass a value with those axes, or drop them from its braces"
    )


# -- property: the spec's meaning agrees with numpy.einsum ----------------------------------------
NAMES = ["a", "b", "c", "d"]
LETTERS = ["p", "q", "r"]
SIZES = {"a": 2, "b": 3, "c": 2, "d": 4, "p": 3, "q": 2, "r": 1}


@st.composite
def einsum_cases(draw):
    count = draw(st.integers(1, 3))
    operands = []
    for _ in range(count):
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
        mentioned = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
        letters = draw(st.lists(st.sampled_from(LETTERS), unique=True, max_size=2))
        operands.append((names, mentioned, letters))
    all_mentioned = sorted({n for _, m, _ in operands for n in m})
    # a name one operand mentions must be listed by every operand carrying it
    operands = [(names, [n for n in names if n in all_mentioned], letters) for names, _, letters in operands]
    out_names = draw(st.lists(st.sampled_from(all_mentioned), unique=True)) if all_mentioned else []
    all_letters = sorted({c for _, _, ls in operands for c in ls})
    out_letters = draw(st.lists(st.sampled_from(all_letters), unique=True)) if all_letters else []
    return operands, out_names, out_letters


def _term(letters, names):
    return "".join(letters) + "{" + ",".join(names) + "}"


@settings(max_examples=60, deadline=None)
@given(einsum_cases(), st.randoms(use_true_random=False))
def test_brace_einsum_agrees_with_numpy(case, rng):
    operands, out_names, out_letters = case
    text = ",".join(_term(ls, m) for _, m, ls in operands) + "->" + _term(out_letters, out_names)
    spec = parse_einsum(text)
    nprng = np.random.default_rng(rng.randint(0, 2**32))
    arrays, orders = [], []
    for names, _, letters in operands:
        order = list(names)
        rng.shuffle(order)
        shape = [SIZES[c] for c in letters] + [SIZES[n] for n in order]
        arrays.append(nprng.standard_normal(shape))
        orders.append(order)
    result = einsum_result(
        spec,
        [{n: SIZES[n] for n in order} for order in orders],
        [tuple(SIZES[c] for c in ls) for _, _, ls in operands],
    )
    subscripts, out_order = positional_einsum(spec, orders, result)
    got = np.einsum(subscripts, *arrays)
    # Reference, independent of the translation: one global index per letter and per name; multiply
    # everything broadcast over the full index space, then sum what the result does not keep.
    indices = sorted({c for _, _, ls in operands for c in ls}) + sorted({n for order in orders for n in order})
    total = np.ones([SIZES[i] for i in indices])
    for array, order, (_, _, letters) in zip(arrays, orders, operands, strict=False):
        own = list(letters) + order
        in_index_order = np.transpose(array, np.argsort([indices.index(i) for i in own]))
        total = total * np.reshape(in_index_order, [SIZES[i] if i in own else 1 for i in indices])
    keep = list(out_letters) + list(out_order)
    summed = total.sum(axis=tuple(k for k, i in enumerate(indices) if i not in keep))
    remaining = [i for i in indices if i in keep]
    expected = np.transpose(summed, [remaining.index(i) for i in keep]) if keep else summed
    assert set(result.named_shape) == set(out_order)
    assert got.shape == tuple(SIZES[i] for i in keep)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
