"""The backward pass's communication through gathers, moves, pools, convs and operations without a transpose, in
the algebra (``_algebra/_backward_placement.py``, ``_algebra/_backward_layout.py``): pure, no jax.
(tests/test_backward_layout_hlo.py holds the plugin's listing equal to compiled HLO.)"""

from __future__ import annotations

from test_backward_placement import kinds, side

from typed_xmap._algebra import (
    BackwardRule,
    Collective,
    CollectiveKind,
    backward_gap,
)

DATA, MODEL = ("data",), ("model",)
AR, AG, A2A, RESHARD = (
    CollectiveKind.ALL_REDUCE,
    CollectiveKind.ALL_GATHER,
    CollectiveKind.ALL_TO_ALL,
    CollectiveKind.RESHARD,
)


def test_a_lookups_transpose_scatter_adds_into_the_table_summing_the_index_axes() -> None:
    """An embedding table split over vocab or embed: its gradient sums the tokens' batch over data (each device
    adds the rows of its own vocab block); the index array (needed or not) has no cotangent taken here."""
    tokens = side("batch seq", "tokens", batch=DATA)
    by_vocab = side("vocab embed", "table", vocab=MODEL, embed=())
    looked_up = side("batch seq embed", batch=DATA, embed=())
    assert kinds(BackwardRule.GATHER, looked_up, by_vocab, tokens) == [(AR, DATA)]
    by_embed = side("vocab embed", "table", embed=MODEL)
    assert kinds(BackwardRule.GATHER, side("batch seq embed", batch=DATA, embed=MODEL), by_embed, tokens) == [
        (AR, DATA)
    ]
    assert kinds(BackwardRule.GATHER, side("batch seq embed", embed=()), by_vocab) == []  # tokens whole: none
    # a pointwise gather (targets share batch): its cotangent goes back into each device's block
    logits = side("batch vocab", batch=DATA, vocab=MODEL)
    assert kinds(BackwardRule.GATHER, side("batch", batch=DATA), logits) == []


def test_a_moves_transpose_is_the_move_back() -> None:
    x = side("batch embed", batch=DATA)
    assert kinds(BackwardRule.MOVE, side("batch embed", batch=(), embed=MODEL), x) == [(AG, MODEL)]
    assert kinds(BackwardRule.MOVE, side("batch embed", batch=(), embed=DATA), x) == [(A2A, DATA)]
    assert kinds(BackwardRule.MOVE, side("batch embed", batch=MODEL, embed=()), x) == [(RESHARD, ("model", "data"))]
    assert kinds(BackwardRule.MOVE, side("batch embed", batch=(), embed=()), x) == []  # split back: a slice
    assert kinds(BackwardRule.MOVE, side("batch embed", batch=DATA), side("batch embed", batch=())) == [(AG, DATA)]


def test_a_pools_transpose_sends_the_halo_back_and_windows_within_blocks_move_nothing() -> None:
    halo = (Collective(CollectiveKind.COLLECTIVE_PERMUTE, MODEL, "edges"),) * 2
    x = side("batch height", height=MODEL)
    permutes = [(CollectiveKind.COLLECTIVE_PERMUTE, MODEL)] * 2
    assert kinds(BackwardRule.WINDOW, side("batch height", height=MODEL), x, forward=halo) == permutes
    assert kinds(BackwardRule.WINDOW, side("batch height", height=MODEL), x) == []


def test_a_convs_transpose_contracts_with_its_spatial_axes_whole_and_moves_their_blocks() -> None:
    """The operand split along height over model (the conv's result leaves height's placement unknown): the
    kernel's gradient sums the batch over data, not height over model (the forward made it whole), and moves
    nothing; the operand's cotangent moves its blocks back; split output features are summed into the operand's."""
    x = side("batch height width chan", batch=DATA, height=MODEL)
    k = side("kh kw chan out", "k")
    y = side("batch height width out", batch=DATA)
    quiet = side("batch height width chan", needed=False, batch=DATA, height=MODEL)
    assert kinds(BackwardRule.CONV, y, quiet, k) == [(AR, DATA)]
    assert kinds(BackwardRule.CONV, y, x, side("kh kw chan out", "k", needed=False)) == [(RESHARD, MODEL)]
    features = side("kh kw chan out", "k", needed=False, out=MODEL)
    whole = side("batch height width chan", batch=DATA)
    assert kinds(BackwardRule.CONV, side("batch height width out", batch=DATA, out=MODEL), whole, features) == [
        (AR, MODEL)
    ]


def test_an_operation_without_a_transpose_is_a_gap_where_it_touches_a_split_axis() -> None:
    x = side("batch seq", batch=DATA, seq=MODEL)
    sliced = side("batch seq", batch=DATA)  # the sliced axis's placement unknown
    assert backward_gap(BackwardRule.PARTIAL, sliced, [x])
    assert backward_gap(BackwardRule.PARTIAL, sliced, [side("batch seq", needed=False, seq=MODEL)]) is False
    merged = side("batch patch", batch=DATA)  # merge_axes of unsplit axes, batch kept: nothing moves back
    assert backward_gap(BackwardRule.PARTIAL, merged, [side("batch gh gw", batch=DATA)]) is False
    sorting = (Collective(CollectiveKind.ALL_GATHER, MODEL, "each block needs the others"),)
    assert backward_gap(BackwardRule.PARTIAL, x, [x], sorting)  # placed as it was, but its forward communicates
    assert backward_gap(BackwardRule.GATHER, sliced, [x]) is False  # a rule known
    assert kinds(BackwardRule.PARTIAL, sliced, x) == []
