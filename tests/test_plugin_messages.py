"""mypy's own messages about NamedArrays read in the user's notation (typed_xmap/plugin/_core/_messages.py).

The rewording goes through one private mypy API (``Errors.error_info_map``); ``test_the_private_api_is_there``
fails loudly when a mypy upgrade changes it (messages then fall back to the encoding)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api
from mypy.errors import Errors
from mypy.options import Options

from typed_xmap.plugin._core._messages import install, installed, readable

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("encoded", "expected"),
    [
        (
            "NamedArray_[floating[_32Bit], TypedDict({'batch'=: Any, 'seq'=: Any, 'mlp'=: Any}), tuple[Any, ...]]",
            'NamedArray[f32, "batch seq mlp"]',
        ),
        (
            "NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], TypedDict({'batch'=: Literal[32], "
            "'in'=: Any}, closed=True), tuple[Literal[3], Any]]",
            'NamedArray[f32, "batch=32 in", "3 _"]',
        ),
        ("NamedArray_[numpy.bool[builtins.bool], Any, Any]", "NamedArray[bool_, Any]"),
        ("NamedArray_[signedinteger[_32Bit], TypedDict({}), tuple[()]]", 'NamedArray[i32, ""]'),
        ("NamedArray_[Any, TypedDict({'*rest'=: Any, 'embed'=: Any}), Any]", 'NamedArray[Any, "*rest embed"]'),
        ("NamedArray_[floating[Any], Any, tuple[Any, ...]]", "NamedArray[Float, Any]"),
        ("tuple[NamedArray_[floating[_64Bit], TypedDict({'a'=: Any}), Any], int]", 'tuple[NamedArray[f64, "a"], int]'),
        # mypy's errors print the encoded shape's fallback: the shape in the user's notation, symbols included
        (
            "NamedArray_[floating[_32Bit], Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]",
            'NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]',
        ),
        # reveal_type prints the qualified class and the items (a symbol is Any there: the name alone)
        (
            "typed_xmap._static.NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], "
            "TypedDict(typed_xmap._static.Shape_, {'batch'=: Literal[8], 'mlp'=: Any}, closed=True), tuple[()]]",
            'NamedArray[f32, "batch=8 mlp"]',
        ),
        (  # a tx.vmap-ed parameter: the mapped axis may be there or not
            "NamedArray_[floating[_32Bit], TypedDict({'in'=: Any, 'batch'?=: Any}, closed=True), tuple[Any, ...]]",
            'NamedArray[f32, "in batch?"]',
        ),
        ("no array here", "no array here"),
    ],
)
def test_readable(encoded, expected):
    assert readable(encoded) == expected


def test_the_private_api_is_there():
    """If this fails, mypy changed ``Errors``: update typed_xmap/plugin/_core/_messages.py (messages still work,
    in the encoding)."""
    errors = Errors(Options())
    assert type(errors.error_info_map) is dict
    install(errors)
    assert installed(errors), "mypy's Errors.error_info_map can no longer be wrapped"
    install(errors)  # idempotent
    assert installed(errors)


def _mypy(tmp_path: Path, cache: Path, source: Path) -> str:
    """mypy's report on ``source``, with the plugin and this checkout's stubs."""
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    out, _, _ = api.run(["--config-file", str(config), "--cache-dir", str(cache / "messages"), str(source)])
    return out


def test_mypy_messages_read_in_the_users_notation(tmp_path, mypy_cache):
    """return-value, arg-type (a function, a method, through jax.jit) and assignment, end to end."""
    source = tmp_path / "model.py"
    source.write_text(
        "import jax\n"
        "import typed_xmap.numpy as tnp\n"
        "from typed_xmap import NamedArray, f32\n"
        'def mlp(h: NamedArray[f32, "batch seq embed"], w: NamedArray[f32, "embed mlp"])'
        ' -> NamedArray[f32, "batch seq"]:\n'
        '    return tnp.einsum("{embed},{embed,mlp}->{mlp}", h, w)\n'
        "class Layer:\n"
        '    def __call__(self, x: NamedArray[f32, "batch embed"]) -> None: ...\n'
        'def probe(x: NamedArray[f32, "batch embed"]) -> None: ...\n'
        'def run(h: NamedArray[f32, "batch seq embed"]) -> None:\n'
        "    Layer()(h)\n"
        "    jax.jit(probe)(h)\n"
        '    y: NamedArray[f32, "batch"] = h\n'
    )
    out = _mypy(tmp_path, mypy_cache, source)
    errors = [line.split(": error: ", 1)[1] for line in out.splitlines() if ": error: " in line]
    assert errors == [
        'Incompatible return value type (got "NamedArray[f32, "mlp batch seq"]", expected '
        '"NamedArray[f32, "batch seq"]")  [return-value]',
        'Argument 1 to "__call__" of "Layer" has incompatible type "NamedArray[f32, "batch seq embed"]"; '
        'expected "NamedArray[f32, "batch embed"]"  [arg-type]',
        'Argument 1 to "probe" has incompatible type "NamedArray[f32, "batch seq embed"]"; '
        'expected "NamedArray[f32, "batch embed"]"  [arg-type]',
        'Incompatible types in assignment (expression has type "NamedArray[f32, "batch seq embed"]", variable '
        'has type "NamedArray[f32, "batch"]")  [assignment]',
    ], out


def test_symbolic_sizes_and_reveal_type_read_in_the_users_notation(tmp_path, mypy_cache):
    """A size from a config shows as written (``mlp=cfg.mlp // 2``) in mypy's own errors; ``reveal_type``
    reads ``NamedArray[f32, "..."]``. If this fails after a mypy upgrade, mypy no longer prints a named
    TypedDict's fallback (``_encoding.SHAPE_FALLBACK``) or the reveal note's form changed."""
    source = tmp_path / "model.py"
    source.write_text(
        "from dataclasses import dataclass\n"
        "import jax.numpy as jnp\n"
        "import typed_xmap.numpy as tnp\n"
        "from typed_xmap import NamedArray, f32\n"
        "@dataclass\n"
        "class Config:\n"
        "    mlp: int\n"
        'def f(cfg: Config, x: NamedArray[f32, "batch=8"]) -> None:\n'
        '    w = tnp.zeros({"batch": 8, "mlp": cfg.mlp // 2}, jnp.float32)\n'
        "    reveal_type(x)\n"
        '    y: NamedArray[f32, "batch"] = w\n'
    )
    out = _mypy(tmp_path, mypy_cache, source)
    lines = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(str(source))]
    assert lines == [
        'note: Revealed type is "NamedArray[f32, "batch=8"]"',
        'error: Incompatible types in assignment (expression has type "NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]", '
        'variable has type "NamedArray[f32, "batch"]")  [assignment]',
    ], out


CACHED_LAYERS = (
    "from dataclasses import dataclass\n"
    "import jax.numpy as jnp\n"
    "import typed_xmap.numpy as tnp\n"
    "from typed_xmap import NamedArray, f32\n"
    "@dataclass(frozen=True)\n"
    "class Config:\n"
    "    mlp: int\n"
    "CFG = Config(mlp=64)\n"
    'W = tnp.zeros({"embed": 8, "mlp": CFG.mlp // 2}, jnp.float32)\n'
    'def unknown(x: NamedArray[f32, "batch seq"]) -> NamedArray[f32, "batch seq"]: ...\n'
    'def positional(x: NamedArray[f32, "batch=2", "n 3"]) -> NamedArray[f32, "batch=2", "n 3"]: ...\n'
)
CACHED_MAIN = (
    "from typed_xmap import NamedArray, f32\n"
    "from layers import W, unknown, positional\n"
    "reveal_type(W)\n"
    "reveal_type(unknown)\n"
    "reveal_type(positional)\n"
    'w: NamedArray[f32, "embed"] = W\n'
)


def test_types_read_alike_through_mypys_cache(tmp_path):
    """A second run, where ``layers.py`` comes from mypy's cache, prints every type as a cold run does: the
    symbolic size (``mlp=CFG.mlp // 2``) survives the cache in errors; reveal_type shows the names."""
    (tmp_path / "layers.py").write_text(CACHED_LAYERS)
    main = tmp_path / "main.py"
    main.write_text(CACHED_MAIN)
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")

    def run(*extra: str) -> list[str]:
        arguments = ["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), *extra, str(main)]
        out, _, _ = api.run(arguments)
        return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(str(main))]

    cold = run()
    assert cold == [
        'note: Revealed type is "NamedArray[f32, "embed=8 mlp"]"',
        'note: Revealed type is "def (x: NamedArray[f32, "batch seq"]) -> NamedArray[f32, "batch seq"]"',
        'note: Revealed type is "def (x: NamedArray[f32, "batch=2", "_ 3"]) -> NamedArray[f32, "batch=2", "_ 3"]"',
        'error: Incompatible types in assignment (expression has type "NamedArray[f32, "embed=8 mlp=CFG.mlp // 2"]", '
        'variable has type "NamedArray[f32, "embed"]")  [assignment]',
    ], cold
    main.write_text(CACHED_MAIN + "# edited: main is checked again, layers is read from the cache\n")
    assert run() == cold
    assert run("--no-incremental") == cold
