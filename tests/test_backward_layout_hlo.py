"""``typed-xmap check --comm``'s backward pass through gathers, placement moves, pools, convs and selections
(tests/programs/grad_comm_layout.py) against XLA: for each jitted step (``jax.value_and_grad`` of a loss), the
collectives it compiles beyond its loss's own forward pass (the step's HLO minus the loss's, each operand of a
combined all-reduce counted as one) are, by (kind, mesh axes), those ``--comm`` lists at its ``jax.value_and_grad``
call, on an 8-device (data=4, model=2) mesh, Explicit and Auto; a listed ``reshard`` stands for any collective that
moves blocks over (some of) its mesh axes. Where XLA chooses otherwise, the difference is recorded with why."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from example_programs import load
from hlo_collectives import MESH, MOVES, ROOT, Listed, compiled, listed
from jax.sharding import AxisType

import typed_xmap as tx

PROGRAM = ROOT / "tests" / "programs" / "grad_comm_layout.py"
Kinds = set[tuple[str, tuple[str, ...]]]

STEPS: dict[str, tuple[str, Kinds]] = {
    # step: (its loss, what --comm lists for its backward pass)
    "lookup_grad": ("lookup_loss", {("all-reduce", ("data",))}),  # the table's gradient sums the batch
    "wide_lookup_grad": ("wide_lookup_loss", {("all-reduce", ("data",))}),
    "pick_grad": ("pick_loss", set()),  # scattered back into each device's block
    "gather_move_grad": ("gather_move_loss", {("all-gather", ("model",))}),  # embed@model moved back: whole
    "swap_move_grad": ("swap_move_loss", {("all-to-all", ("data",))}),  # data back from embed to batch
    "halo_grad": ("halo_loss", {("collective-permute", ("model",))}),  # the cotangent's edges sent back
    "blocks_grad": ("blocks_loss", set()),  # windows within a block
    "conv_kernel_grad": ("conv_loss", {("all-reduce", ("data",))}),  # the operand the forward made whole
    "conv_input_grad": ("conv_input_loss", {("reshard", ("model",))}),
    "features_grad": ("features_loss", {("all-reduce", ("model",))}),  # the split output features summed
    "channels_grad": ("channels_loss", {("all-reduce", ("data",))}),  # split channels: the kernel's own
    "where_grad": ("where_loss", {("all-reduce", ("data",))}),  # w broadcast along the split batch
    "first_grad": ("first_loss", set()),  # one index: written into the owning block
    "top_grad": ("top_loss", set()),  # top_k's values scattered back into each block
    "sorted_grad": ("sorted_loss", set()),  # no backward rule: the list says it is partial
    "reshard_grad": ("reshard_loss", {("reshard", ("model", "data"))}),
    "partial_grad": ("lookup_loss", {("all-reduce", ("data",))}),  # jax.grad of a partial of the lookup's loss
    "lambda_grad": ("lookup_loss", {("all-reduce", ("data",))}),  # and of a lambda calling it
    "nested_grad": ("lookup_loss", {("all-reduce", ("data",))}),  # and of a loss defined inside the step
}
UNLISTED: dict[tuple[str, AxisType], Kinds] = {
    # On Auto axes XLA keeps the conv's output split along height (the forward's reshard is a halo exchange
    # there), so the kernel's gradient also sums height over model and exchanges the edges again. On Explicit
    # axes the forward makes height whole (the conv's result sharding) and the kernel's gradient moves nothing.
    ("conv_kernel_grad", AxisType.Auto): {("all-reduce", ("model",)), ("collective-permute", ("model",))},
    # tnp.sort along the split embed has no backward rule (its listing says it is partial): XLA moves its
    # cotangent back over model, an all-gather on Explicit axes, an all-reduce on Auto ones.
    ("sorted_grad", AxisType.Explicit): {("all-gather", ("model",))},
    ("sorted_grad", AxisType.Auto): {("all-reduce", ("model",))},
    # top_k along a split axis on Auto axes: XLA sorts across devices (the forward's recorded difference,
    # docs/guide/sharding.md), and its scatter-add back sums over model.
    ("top_grad", AxisType.Auto): {("all-reduce", ("model",))},
}
"""What a step compiles beyond its loss's forward pass that ``--comm`` does not list, and why (the comments)."""
AUTO_PLACED: dict[str, Kinds] = {
    # tx.constrain on Auto axes is a sharding constraint: its transpose constrains the cotangent of its result
    # only, and XLA places the operand's cotangent (the gradient, whose output placement a jitted step leaves
    # free) as it is: no move back.
    "gather_move_grad": {("all-gather", ("model",))},
    "swap_move_grad": {("all-to-all", ("data",))},
    "reshard_grad": {("reshard", ("model", "data"))},
}
"""Listed backward collectives that XLA leaves out on Auto axes, and why."""


@functools.cache
def _listed() -> dict[str, Listed]:
    return listed(PROGRAM)


@pytest.fixture(scope="module")
def program():
    return load(PROGRAM, PROGRAM.stem)


def _arguments() -> dict[str, tuple]:
    def value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
        return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)

    def indices(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
        data = jnp.arange(8 ** len(axes), dtype=jnp.int32).reshape((8,) * len(axes)) % 8
        return tx.shard(tx.named(data, axes), placement)

    tokens = indices(["batch", "seq"], {"batch": "data"})
    image = value(["batch", "height", "width", "chan"], {"batch": "data", "height": "model"})
    kernel = tx.named(jnp.ones((3, 3, 8, 8)), ["kh", "kw", "chan", "out"])
    x = value(["batch", "embed"], {"batch": "data"})
    return {
        "lookup_grad": (value(["vocab", "embed"], {"vocab": "model"}), tokens),
        "wide_lookup_grad": (value(["vocab", "embed"], {"embed": "model"}), tokens),
        "pick_grad": (
            value(["batch", "vocab"], {"batch": "data", "vocab": "model"}),
            indices(["batch"], {"batch": "data"}),
        ),
        "gather_move_grad": (x,),
        "swap_move_grad": (x,),
        "halo_grad": (image,),
        "blocks_grad": (image,),
        "conv_kernel_grad": (kernel, image),
        "conv_input_grad": (image, kernel),
        "features_grad": (
            value(["batch", "height", "width", "chan"], {"batch": "data"}),
            tx.shard(kernel, {"out": "model"}),
        ),
        "channels_grad": (
            tx.shard(kernel, {"chan": "model"}),
            value(["batch", "height", "width", "chan"], {"batch": "data", "chan": "model"}),
        ),
        "where_grad": (value(["embed"], {}), x),
        "first_grad": (value(["batch", "seq", "embed"], {"batch": "data", "seq": "model"}),),
        "top_grad": (value(["batch", "embed"], {"batch": "data", "embed": "model"}),),
        "sorted_grad": (value(["batch", "embed"], {"batch": "data", "embed": "model"}),),
        "reshard_grad": (x,),
        "partial_grad": (value(["vocab", "embed"], {"vocab": "model"}), tokens),
        "lambda_grad": (value(["vocab", "embed"], {"vocab": "model"}), tokens),
        "nested_grad": (value(["vocab", "embed"], {"vocab": "model"}), tokens),
    }


def _matched(static: Kinds, hlo: Kinds) -> tuple[Kinds, Kinds]:
    """``static`` and ``hlo`` with each listed ``reshard`` taken out of both together with the block-moving
    collectives over (some of) its mesh axes it stands for (at least one must be there)."""
    static, hlo = set(static), set(hlo)
    for kind, axes in sorted(static):
        if kind == "reshard":
            moves = {(k, a) for k, a in hlo if k in MOVES and set(a) <= set(axes)}
            if moves:
                static.discard((kind, axes))
                hlo -= moves
    return static, hlo


def test_the_backward_listing_is_as_recorded():
    """What ``--comm`` lists at each step's ``jax.value_and_grad`` call, by (kind, mesh axes)."""
    found = _listed()
    assert {step: {k for k, n in found.get(step, Counter()).items() if n} for step in STEPS} == {
        step: kinds for step, (_, kinds) in STEPS.items()
    }


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_backward_collectives_of_gathers_moves_windows_and_selections_equal_the_compiled_hlos(program, axis_type):
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    compared, expected = {}, {}
    with jax.set_mesh(mesh):
        arguments = _arguments()
        for step, (loss, kinds) in STEPS.items():
            args = arguments[step]
            both = compiled(getattr(program, step), *args, combined=False)
            alone = compiled(jax.jit(getattr(program, loss)), *args, combined=False)
            listed_kinds = kinds - (AUTO_PLACED.get(step, set()) if axis_type == AxisType.Auto else set())
            hlo = {k for k, n in (both - alone).items() if n}
            static, hlo = _matched(listed_kinds, hlo)
            assert not {k for k in static if k[0] == "reshard"}, (step, hlo)  # a reshard moves some blocks
            compared[step] = hlo
            expected[step] = static | UNLISTED.get((step, axis_type), set())
    assert compared == expected


def _line(text: str) -> int:
    """The line of the program that holds ``text``."""
    (line,) = [i for i, row in enumerate(PROGRAM.read_text().splitlines(), 1) if text in row]
    return line


def test_a_backward_list_it_cannot_complete_says_it_is_partial():
    """A slice and a sort along a split axis have no backward rule, a loss taken from a dict is not read, a loss
    defined below its grad call is not checked yet: each step's listing says its backward list is partial (a note
    naming what and where) rather than listing nothing (XLA moves the slice's cotangent blocks back, a
    collective-permute, and the sort's over model)."""
    command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--comm", str(PROGRAM)]
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False, timeout=600).stdout
    partial = [line for line in out.splitlines() if "backward list partial" in line]
    where = PROGRAM.relative_to(ROOT)
    gap = "has no backward rule here: what its backward pass moves is not listed"
    assert partial == [
        f"{where}:{_line('value_and_grad(head_loss)')}: note: backward list partial: x[{{'seq': slice(0, 4)}}] {gap} "
        f"(head_loss: line {_line('slice(0, 4)')})",
        f"{where}:{_line('value_and_grad(sorted_loss)')}: note: backward list partial: tnp.sort(x) {gap} "
        f"(sorted_loss: line {_line('tnp.sort(x')})",
        f"{where}:{_line('value_and_grad(LOSSES')}: note: backward list partial: a gradient of a function not read "
        "here is not listed",
        f"{where}:{_line('value_and_grad(late_loss)')}: note: backward list partial: late_loss is defined below "
        "this call (not yet checked): its backward pass is not listed",
    ]
    assert not {"head_grad", "sorted_grad", "unread_grad", "early_grad"} & set(_listed())  # no collective listed
