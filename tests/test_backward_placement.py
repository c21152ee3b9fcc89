"""The backward pass's communication in the algebra (``_algebra/_backward_placement.py``): each placement rule's
transpose, pure, no jax. (tests/test_comm_hlo.py holds the plugin's listing equal to compiled HLO.)"""

from __future__ import annotations

from typed_xmap._algebra import BackwardOperand, BackwardRule, CollectiveKind, backward_collectives

DATA = ("data",)
MODEL = ("model",)


def side(names: str, label: str = "x", *, needed: bool = True, **placement: tuple[str, ...]) -> BackwardOperand:
    return BackwardOperand(tuple(names.split()), placement, label, needed)


def kinds(rule: BackwardRule, result: BackwardOperand, *operands: BackwardOperand, **options: object) -> list:
    found = backward_collectives(rule, result, operands, operation="op", **options)  # type: ignore[arg-type]
    return [(c.kind, c.mesh_axes) for c in found]


def test_a_data_parallel_weights_gradient_sums_the_split_batch() -> None:
    x, w = side("batch embed", batch=DATA, needed=False), side("embed mlp", "w")
    y = side("batch mlp", "y", batch=DATA)
    assert kinds(BackwardRule.CONTRACTION, y, x, w) == [(CollectiveKind.ALL_REDUCE, DATA)]
    (collective,) = backward_collectives(BackwardRule.CONTRACTION, y, (x, w), operation="tnp.einsum(x, w)")
    assert str(collective) == (
        "all-reduce over data: tnp.einsum(x, w) (backward: the cotangent of w) sums 'batch', split over data"
    )


def test_a_tensor_parallel_inputs_cotangent_sums_the_split_mlp_and_only_needed_cotangents_count() -> None:
    x, w_in = side("batch embed", batch=DATA), side("embed mlp", "w_in", needed=False, mlp=MODEL)
    h = side("batch mlp", batch=DATA, mlp=MODEL)
    assert kinds(BackwardRule.CONTRACTION, h, x, w_in) == [(CollectiveKind.ALL_REDUCE, MODEL)]
    both = side("embed mlp", "w_in", mlp=MODEL)
    assert kinds(BackwardRule.CONTRACTION, h, x, both) == [
        (CollectiveKind.ALL_REDUCE, MODEL),
        (CollectiveKind.ALL_REDUCE, DATA),
    ]
    quiet = side("batch embed", needed=False, batch=DATA)
    assert kinds(BackwardRule.CONTRACTION, h, quiet, side("embed mlp", needed=False, mlp=MODEL)) == []


def test_an_fsdp_weights_gradient_is_summed_into_its_blocks_and_its_cotangent_gathers_the_weight() -> None:
    x, w = side("batch embed", batch=DATA), side("embed mlp", "w", embed=DATA)
    y = side("batch mlp", batch=DATA)
    assert kinds(BackwardRule.CONTRACTION, y, x, w) == [
        (CollectiveKind.ALL_GATHER, DATA),  # dx = contract(dy, w): w's embed leaves data for x's batch
        (CollectiveKind.REDUCE_SCATTER, DATA),  # dw = contract(x, dy): batch summed, into embed@data
    ]


def test_a_broadcast_operands_cotangent_sums_the_axes_it_lacks() -> None:
    x, scale = side("batch embed", needed=False, batch=DATA), side("embed", "scale")
    assert kinds(BackwardRule.BROADCAST, side("batch embed", batch=DATA), x, scale) == [
        (CollectiveKind.ALL_REDUCE, DATA)
    ]
    same = side("batch embed", batch=DATA)
    assert kinds(BackwardRule.BROADCAST, side("batch embed", batch=DATA), same, same) == []


def test_a_value_whole_along_an_axis_its_result_splits_gathers_its_cotangent() -> None:
    token = side("batch patch embed", "cls")
    assert kinds(BackwardRule.BROADCAST, side("batch patch embed", batch=DATA), token) == [
        (CollectiveKind.ALL_GATHER, DATA)
    ]
    elsewhere = side("batch embed", "x", batch=MODEL)
    assert kinds(BackwardRule.BROADCAST, side("batch embed", batch=DATA), elsewhere) == [(CollectiveKind.RESHARD, DATA)]


def test_a_normalisation_sums_along_its_split_axis_and_a_reduction_communicates_nothing() -> None:
    logits = side("batch vocab", batch=DATA, vocab=MODEL)
    assert kinds(BackwardRule.NORMALISATION, logits, logits, normalised=("vocab",)) == [
        (CollectiveKind.ALL_REDUCE, MODEL)
    ]
    assert kinds(BackwardRule.NORMALISATION, logits, logits, normalised=("batch2",)) == []
    # var and std drop the axis: their mean's cotangent sums the operand's along it
    x = side("batch embed", batch=DATA, embed=MODEL)
    assert kinds(BackwardRule.NORMALISATION, side("batch", batch=DATA), x, normalised=("embed",)) == [
        (CollectiveKind.ALL_REDUCE, MODEL)
    ]
    assert kinds(BackwardRule.NONE, side("embed"), side("batch embed", batch=DATA)) == []
