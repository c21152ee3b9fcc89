"""``typed-xmap check --comm`` against XLA: the collectives the plugin lists per jitted function (kind, mesh axes)
equal those in the compiled HLO on an 8-device mesh (data=4, model=2), for tests/programs/placement_comm.py and for
the model functions of examples/transformer.py, vit.py and moe.py (forward passes; what XLA adds for operations
the checker has no rule for is recorded per function, with why); and for the backward passes of
tests/programs/grad_comm.py's steps and of the examples' ``train_step`` (which kinds and mesh axes occur: XLA
combines all-reduces). Where XLA chooses how to move blocks (a conv over a split spatial axis), the plugin lists a
``reshard``, which the test matches with any collective that moves blocks over those mesh axes."""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import typing
from collections import Counter
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import pytest
from hlo_collectives import MESH, MOVES, ROOT, Listed, compiled, listed
from jax.sharding import AxisType

import typed_xmap as tx

PROGRAM = ROOT / "tests" / "programs" / "placement_comm.py"
MOE = ROOT / "examples" / "moe.py"


def _imported(path):
    """The module of a program in tests/programs/."""
    sys.path.insert(0, str(path.parent))
    try:
        return importlib.import_module(path.stem)
    finally:
        sys.path.remove(str(path.parent))


@pytest.fixture(scope="module")
def program():
    return _imported(PROGRAM)


def test_listed_collectives_equal_the_compiled_hlos(program):
    static = listed(PROGRAM)
    with jax.set_mesh(jax.make_mesh(tuple(MESH.values()), tuple(MESH))):

        def value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
            return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)

        calls = {
            "project": (value(["batch", "embed"], {"embed": "model"}), value(["embed", "mlp"], {"embed": "model"})),
            "pool": (value(["batch", "embed"], {"batch": "data"}),),
            "scale": (
                value(["batch", "embed"], {"batch": "data", "embed": "model"}),
                value(["embed"], {"embed": "model"}),
            ),
            "fsdp_matmul": (value(["batch", "embed"], {"batch": "data"}), value(["embed", "mlp"], {"embed": "data"})),
            "local_matmul": (value(["batch", "embed"], {"batch": "data"}), value(["embed", "mlp"], {"mlp": "model"})),
            "pool_windows": (value(["batch", "height", "width", "chan"], {"height": "model"}),),
            "pool_blocks": (value(["batch", "height", "width", "chan"], {"height": "model"}),),
            "conv_windows": (
                value(["batch", "height", "width", "chan"], {"batch": "data", "height": "model"}),
                tx.named(jnp.ones((3, 3, 8, 8)), ["kh", "kw", "chan", "out"]),
            ),
        }
        calls["xmapped_project"] = (value(["batch", "embed"], {}), value(["embed", "mlp"], {}))
        split = value(["batch", "vocab"], {"batch": "data", "vocab": "model"})
        tokens = tx.shard(tx.named(jnp.zeros((8, 8), jnp.int32), ["batch", "seq"]), {"batch": "data"})
        calls |= {
            "standardise": (value(["batch", "embed"], {"batch": "data", "embed": "model"}),),
            "log_probs": (split,),
            "lookup": (value(["vocab", "embed"], {"vocab": "model"}), tokens),
            "best": (split,),
            "running_total": (split,),
            "regather": (value(["batch", "seq", "embed"], {"batch": "data", "seq": "model"}),),
        }
        hlo = {name: compiled(jax.jit(getattr(program, name)), *args) for name, args in calls.items()}
    assert hlo["project"] == Counter({("all-reduce", ("model",)): 1})  # the programs do communicate
    assert hlo["pool"] == Counter({("all-reduce", ("data",)): 1})
    assert hlo["fsdp_matmul"] == Counter({("all-gather", ("data",)): 1})
    assert hlo["xmapped_project"] == Counter({("all-reduce", ("model",)): 1})  # placed by axis_resources
    assert hlo["pool_windows"] == Counter({("collective-permute", ("model",)): 2})  # a halo: one each way
    # A conv over a split spatial axis: the checker lists a reshard (XLA chooses how to move the blocks: an
    # all-gather of the operand here, a halo exchange elsewhere), which stands for any such collective.
    reshards = static.get("conv_windows", Counter()).pop(("reshard", ("model",)), 0)
    moved = sum(n for (kind, axes), n in hlo["conv_windows"].items() if axes == ("model",) and kind in MOVES)
    assert reshards == 1 and moved >= 1, (static.get("conv_windows"), hlo["conv_windows"])
    hlo["conv_windows"] = Counter({k: n for k, n in hlo["conv_windows"].items() if k[1] != ("model",)})
    assert {name: static.get(name, Counter()) for name in calls} == hlo


# ---- the examples' model functions ----------------------------------------------------------------------------
#
# Each model function of examples/transformer.py, vit.py and moe.py is jitted on its own (its forward pass) on the
# 8-device mesh, its inputs placed by the example's own mappings (which its annotations declare: see
# test_the_examples_annotations_declare_their_mappings). Its compiled collectives must equal, by (kind, mesh axes):
# what ``--comm`` lists in the function, plus what it lists in the model functions it calls (CALLS: a function's
# HLO holds its callees'; a ``tx.scan``'s step compiles once, in the loop's body), each value a collective carries
# counted once (``combined=False``: XLA's combiner packs independent all-reduces into one tuple op, as the
# sharding guide says). Nothing is left over: every collective the examples compile is listed. Backward passes
# are compared below (the examples' ``train_step`` differentiates ``loss`` with ``jax.value_and_grad``: ``--comm``
# lists the backward pass's collectives at that call).

EXAMPLE_MODELS = {name: ROOT / "examples" / f"{name}.py" for name in ("transformer", "vit", "moe")}


def _example_mappings(module) -> list[dict[str, tuple[str, ...]]]:
    """The example's placements, each axis -> mesh axes (``()``: whole): RESOURCES, or for the MoE the
    activations' TOKENS, the weights' PARAMS and the router's ROUTER (EXPERTS, the placement inside the experts,
    is declared by its moe_dispatch call)."""
    names = ["RESOURCES"] if hasattr(module, "RESOURCES") else ["TOKENS", "PARAMS", "ROUTER"]
    return [{axis: _mesh_axes(mesh) for axis, mesh in getattr(module, n).items()} for n in names]


def _mesh_axes(mesh: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """A mapping's value as the mesh axes an annotation declares: ``None`` (not split) is ``()``, whole."""
    return () if mesh is None else (mesh,) if isinstance(mesh, str) else tuple(mesh)


def _declared(hint: object) -> Iterator[dict[str, tuple[str, ...]]]:
    """The placements the NamedArray annotations inside ``hint`` declare (through tuples, dicts, TypedDicts)."""
    if isinstance(getattr(hint, "placement", None), dict):
        yield hint.placement  # type: ignore[attr-defined]
    elif typing.is_typeddict(hint):
        for field in typing.get_type_hints(hint).values():
            yield from _declared(field)
    for arg in typing.get_args(hint):
        yield from _declared(arg)


@functools.cache
def _example(name: str):
    from example_programs import load

    return load(EXAMPLE_MODELS[name], f"{name}_comm_example")


@pytest.mark.parametrize("name", list(EXAMPLE_MODELS))
def test_the_examples_annotations_declare_their_mappings(name):
    """One source of truth: every placement an example's annotations declare (``Hidden = NamedArray[f32,
    "batch@data seq embed"]``, a weight's ``"embed heads@model head_dim"``, the MoE router's ``"embed
    expert@()"``) is the one one of its mappings gives those axes, and every placement its mappings give is
    declared somewhere, so placing by the mappings (as ``train`` does) is placing as the annotations say."""
    module = _example(name)
    functions = [v for v in vars(module).values() if inspect.isfunction(v) and v.__module__ == module.__name__]
    hints = [h for f in functions for h in typing.get_type_hints(f, vars(module)).values()]
    declared = [d for h in hints for d in _declared(h)]
    mappings = _example_mappings(module)
    for placement in declared:  # each annotation places its axes as one of the mappings does
        assert any({axis: m.get(axis) for axis in placement} == placement for m in mappings), (name, placement)
    pairs = {pair for d in declared for pair in d.items()}
    assert {pair for m in mappings for pair in m.items()} == pairs, name


def _transformer(module):
    c = module.Config()
    params = tx.shard(module.init(c, jax.random.key(0)), module.RESOURCES)
    tokens, targets = tx.shard(next(module.batches(c)), module.RESOURCES)
    layer = {k: v[{"layers": 0}] for k, v in params["layers"].items()}  # what tx.scan hands block
    x = tx.shard(params["embed"][{"vocab": tokens}] + params["positions"], module.RESOURCES)
    layer_args = (x, layer)
    return {
        "layer_norm": (x, layer["mlp_norm"]),
        "attention": layer_args,
        "mlp": layer_args,
        "block": layer_args,
        "logits": (params, tokens),
        "token_losses": (params, tokens, targets),
        "loss": (params, tokens, targets),
    }


def _vit(module):
    c = module.Config()
    params = tx.shard(module.init(c, jax.random.key(0)), module.RESOURCES)
    images, labels = tx.shard(next(module.batches(c)), module.RESOURCES)
    x = module.patches(images, params)
    return {
        "patches": (images, params),
        "norm": (x,),
        "attention": (x, params),
        "mlp": (x, params),
        "loss": (params, images, labels),
    }


def _moe(module):
    c = module.Config()
    params = module.place(module.init(c, jax.random.key(0)))
    tokens, targets = tx.shard(next(module.batches(c)), module.TOKENS)
    x = tx.constrain(params["embed"][{"vocab": tokens}] + params["positions"], module.TOKENS)
    return {"norm": (x,), "attention": (x, params), "experts": (x, params), "loss": (params, tokens, targets)}


ARGUMENTS = {"transformer": _transformer, "vit": _vit, "moe": _moe}
CALLS = {
    ("transformer", "block"): ("layer_norm", "attention", "layer_norm", "mlp"),
    ("transformer", "logits"): ("block", "layer_norm"),
    ("transformer", "token_losses"): ("logits",),
    ("transformer", "loss"): ("token_losses",),
    ("vit", "loss"): ("patches", "norm", "attention", "norm", "mlp", "norm", "norm"),
    ("moe", "loss"): ("norm", "attention", "norm", "experts", "norm"),
}
"""The model functions each calls (its HLO holds their collectives)."""


@functools.cache
def _listed_example(name: str) -> dict[str, Listed]:
    return listed(EXAMPLE_MODELS[name])


def _expected(name: str, function: str) -> Listed:
    """What ``--comm`` lists in ``function`` and in the model functions it calls."""
    total = Counter(_listed_example(name).get(function, Counter()))  # a copy: the listing is cached
    for callee in CALLS.get((name, function), ()):
        total += _expected(name, callee)
    return total


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("name", list(EXAMPLE_MODELS))
def test_the_examples_listed_collectives_equal_the_compiled_hlos(name, axis_type):
    """Per model function jitted alone: the compiled HLO's collectives equal the listed ones (its own and its
    callees'), value by value. On Auto axes XLA places the intermediate values itself; with every input placed
    as the annotations say it makes the same choices as on Explicit axes here, and the test holds it so."""
    module = _example(name)
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        calls = ARGUMENTS[name](module)
        hlo = {}
        for function, args in calls.items():
            jitted = getattr(module, function)
            if "capacity" in inspect.signature(jitted).parameters:
                jitted = functools.partial(jitted, capacity=module.Config().capacity)
            hlo[function] = compiled(jax.jit(jitted), *args, combined=False)
    assert any(hlo.values())  # the examples do communicate
    assert {function: _expected(name, function) for function in calls} == hlo
    # every listing compared (train_step's, its backward pass, by test_the_examples_train_steps_...)
    assert {f for f, found in _listed_example(name).items() if found} <= {*calls, "train_step"}


def test_the_moe_examples_expert_layer_lists_its_moves_and_its_routings_mean():
    """examples/moe.py's expert layer sends each token to its expert's devices and back (moe_dispatch and
    moe_combine, placed by the resources their calls declare): two all-to-alls; and tx.moe_route's balance loss
    averages the router's logits over the batch, split over every device: an all-reduce."""
    assert _listed_example("moe")["experts"] == Counter(
        {("all-to-all", ("model",)): 2, ("all-reduce", ("data", "model")): 1}
    )


# ---- backward passes ------------------------------------------------------------------------------------------
#
# At a ``jax.grad(f)``/``jax.value_and_grad(f)`` call ``--comm`` lists the collectives of ``f``'s backward pass
# (the transposes of its placed operations and of the module functions it calls, for the operands whose cotangent
# is needed), under the function that makes the call. A jitted training step compiles ``f``'s forward pass (its
# listing and its callees') and that backward pass. XLA's all-reduce combiner merges the all-reduces of
# one step over the same devices into one (a tuple all-reduce: the weights' gradients summed over data become one),
# and under ``jax.grad`` it drops the forward collectives that only compute the value (a loss's final mean), so
# counts differ: the test compares which (kind, mesh axes) occur. A listed reduce-scatter (a gradient summed into a
# weight's blocks) is an all-reduce and a slice on XLA's CPU backend, which forms no reduce-scatter: it is
# compared as an all-reduce over the same mesh axes.

GRAD_PROGRAM = ROOT / "tests" / "programs" / "grad_comm.py"


def _kinds(found: Listed) -> set[tuple[str, tuple[str, ...]]]:
    """Which (kind, mesh axes) occur, a reduce-scatter read as the all-reduce XLA's CPU backend compiles."""
    return {("all-reduce" if kind == "reduce-scatter" else kind, axes) for (kind, axes), n in found.items() if n}


@functools.cache
def _listed_grad_program() -> dict[str, Listed]:
    return listed(GRAD_PROGRAM)


@pytest.fixture(scope="module")
def grad_program():
    return _imported(GRAD_PROGRAM)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_listed_backward_collectives_equal_the_compiled_hlos(grad_program, axis_type):
    """Data-parallel, tensor-parallel and FSDP steps: the forward's listing plus the backward's (at the grad
    call) equal the compiled step's collectives, by (kind, mesh axes)."""
    static = _listed_grad_program()
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):

        def value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
            return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)

        x = value(["batch", "embed"], {"batch": "data"})
        mlp = (value(["embed", "mlp"], {"mlp": "model"}), value(["mlp", "embed"], {"mlp": "model"}), x)
        calls = {
            "linear_grad": ("linear_loss", (value(["embed", "mlp"], {}), x)),
            "mlp_grad": ("mlp_loss", mlp),
            "mlp_input_grad": ("mlp_loss", mlp),
            "scale_grad": ("scaled_loss", (value(["embed"], {}), x)),
            "fsdp_grad": ("fsdp_loss", (value(["embed", "mlp"], {"embed": "data"}), x)),
        }
        hlo = {step: compiled(getattr(grad_program, step), *args) for step, (_, args) in calls.items()}
    backward = {step: static.get(step, Counter()) for step in calls}
    # The backward passes communicate, and only there: a data-parallel weight's gradient summed over data, the
    # tensor-parallel input's cotangent summed over model (the weights' not needed), the FSDP weight's gradient
    # summed into its blocks over data.
    assert backward["linear_grad"] == Counter({("all-reduce", ("data",)): 1})
    assert backward["mlp_grad"] == Counter({("all-reduce", ("data",)): 2})
    assert backward["mlp_input_grad"] == Counter({("all-reduce", ("model",)): 1})
    assert backward["scale_grad"] == Counter({("all-reduce", ("data",)): 1})
    assert backward["fsdp_grad"] == Counter({("reduce-scatter", ("data",)): 1})
    assert hlo["mlp_input_grad"] == Counter({("all-reduce", ("model",)): 2, ("all-reduce", ("data",)): 1})
    expected = {step: _kinds(backward[step] + static.get(loss, Counter())) for step, (loss, _) in calls.items()}
    assert expected == {step: _kinds(found) for step, found in hlo.items()}


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_normalisations_backward_collectives_are_counted_as_compiled(grad_program, axis_type):
    """Softmax, log-softmax, var, std-and-logsumexp losses under ``jax.value_and_grad`` (the value kept: no
    forward collective is dropped): the forward's listing plus the backward's equal the compiled step's
    collectives COUNTED, each operand of a tuple all-reduce XLA's combiner made counted as one (``combined=False``:
    the combiner merges a backward sum with an independent forward one)."""
    static = _listed_grad_program()
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):

        def value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
            return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)

        w, x = value(["embed", "vocab"], {"vocab": "model"}), value(["batch", "embed"], {"batch": "data"})
        split = value(["batch", "embed"], {"batch": "data", "embed": "model"})
        calls = {
            "softmax_input_grad": ("softmax_loss", (w, x)),
            "log_softmax_weight_grad": ("log_softmax_loss", (w, x)),
            "var_grad": ("var_loss", (split,)),
            "spread_grad": ("spread_loss", (split,)),
        }
        hlo = {step: compiled(getattr(grad_program, step), *args, combined=False) for step, (_, args) in calls.items()}
    backward = {step: static.get(step, Counter()) for step in calls}
    model, data = ("all-reduce", ("model",)), ("all-reduce", ("data",))
    # the normalisation's cotangent summed along its split axis (softmax's dC times the result, var's and std's
    # mean's cotangent), then the einsum's; logsumexp's maximum is held constant and its sum transposes to a
    # broadcast: none
    assert backward["softmax_input_grad"] == Counter({model: 2})
    assert backward["log_softmax_weight_grad"] == Counter({model: 1, data: 1})
    assert backward["var_grad"] == backward["spread_grad"] == Counter({model: 1})
    assert hlo["var_grad"] == Counter({model: 3, data: 1})  # the mean, the squared deviations', the backward's
    assert {step: backward[step] + static[loss] for step, (loss, _) in calls.items()} == hlo


BACKWARD_KINDS = {
    # the weights' gradients summed over the batch split over data; the activations' cotangents summed over
    # heads and mlp split over model (Megatron's backward all-reduces)
    "transformer": {("all-reduce", ("data",)), ("all-reduce", ("model",))},
    # the same, and the class token's cotangent gathered over data (it is whole along batch)
    "vit": {("all-reduce", ("data",)), ("all-reduce", ("model",)), ("all-gather", ("data",))},
    # the batch is split over (data, model); the experts' weights (expert on model) sum it over data only
    "moe": {("all-reduce", ("data", "model")), ("all-reduce", ("data",))},
}
"""What each example's backward pass lists, by (kind, mesh axes)."""
AUTO_PLACED = {
    # patches: the class token (``tnp.zeros_like(p["cls"], new_axes={"batch": ...})``, batch whole) concatenated
    # with the tokens split along batch over data. On Explicit axes JAX places its cotangent as the token (whole):
    # the listed all-gather; on Auto axes XLA keeps the cotangent split and gathers nothing.
    "vit": {("all-gather", ("data",))},
}
"""Listed backward collectives that XLA leaves out on Auto axes, where it places the cotangents itself."""


def _train_step(name: str, module, calls: dict[str, tuple]):
    """The example's jitted ``train_step`` and its arguments (the optimizer's state made from the params)."""
    params, *data = calls["loss"]
    step = module.train_step
    if "capacity" in inspect.signature(step).parameters:
        step = jax.jit(functools.partial(step, capacity=module.Config().capacity))
    return step, (params, module.OPTIMIZER.init(params), *data)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
@pytest.mark.parametrize("name", list(EXAMPLE_MODELS))
def test_the_examples_train_steps_listed_collectives_equal_the_compiled_hlos(name, axis_type):
    """Each example's jitted ``train_step`` (``jax.value_and_grad(loss)``, then the optimizer's elementwise
    update): the compiled HLO's collectives, by (kind, mesh axes), are those of ``loss``'s forward pass (as
    test_the_examples_listed_collectives_equal_the_compiled_hlos compares them) and of its backward pass, which
    ``--comm`` lists at the ``jax.value_and_grad`` call, in ``train_step``."""
    module = _example(name)
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        step, args = _train_step(name, module, ARGUMENTS[name](module))
        hlo = compiled(step, *args)
    backward = _listed_example(name).get("train_step", Counter())
    assert _kinds(backward) == BACKWARD_KINDS[name]
    placed_by_xla = AUTO_PLACED.get(name, set()) if axis_type == AxisType.Auto else set()
    expected = _kinds(_expected(name, "loss") + backward) - placed_by_xla
    assert expected == _kinds(hlo)
