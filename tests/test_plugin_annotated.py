"""The plugin takes over ``Annotated[...]`` only when argument 0 is a typed_xmap dtype: every other use gives
mypy output identical with and without the plugin (errors included)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    """A plugin hook that fails raises (mypy INTERNAL ERROR) instead of degrading quietly."""
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


ORDINARY_ANNOTATED = textwrap.dedent(
    """
    from dataclasses import dataclass
    from typing import Annotated, Any, ClassVar, Final, Generic, Literal, NotRequired, Optional, Required
    from typing import TypedDict, TypeVar, overload
    import typing_extensions as te

    T = TypeVar("T")


    class Field:  # pydantic-style metadata object
        def __init__(self, *, gt: int = 0, description: str = "") -> None: ...


    PositiveInt = Annotated[int, Field(gt=0)]
    Name: te.TypeAlias = Annotated[str, Field(description="a name"), "doc"]
    Nested = Annotated[Annotated[list[int], "inner"], "outer"]
    Wrapped = Annotated[T, "meta"]
    OptionalAlias = Optional[Annotated[int, "x"]]


    class Movie(TypedDict):
        title: Required[Annotated[str, "required title"]]
        year: Annotated[NotRequired[int], "optional year"]
        rating: NotRequired[Annotated[float, Field(gt=0)]]


    class Partial(TypedDict, total=False):
        name: Annotated[Required[str], "req"]


    @dataclass
    class Model:
        count: ClassVar[Annotated[int, "class var"]] = 0
        limit: Annotated[ClassVar[int], "class var outside"] = 1
        x: Annotated[int, Field(gt=0)] = 1
        y: te.Annotated[str, "te"] = ""
        final: Final[Annotated[int, "final"]] = 3


    class Box(Generic[T]):
        item: Annotated[T, "item"]

        def get(self) -> Annotated[T, "result"]:
            return self.item


    @overload
    def pick(x: Annotated[int, "i"]) -> Annotated[str, "s"]: ...
    @overload
    def pick(x: Annotated[str, "s"]) -> Annotated[int, "i"]: ...
    def pick(x: Any) -> Any:
        return x


    def f(a: PositiveInt, b: Name, c: Nested, d: Wrapped[bytes], e: Annotated[Literal["r", "w"], "mode"]) -> None:
        reveal_type(a)
        reveal_type(b)
        reveal_type(c)
        reveal_type(d)
        reveal_type(e)
        reveal_type(pick(1))
        reveal_type(Box[int]().get())
        m: Movie = {"title": "x"}
        m2: Movie = {"year": 1}
        p: Partial = {}
        reveal_type(Model.count)
        s: Annotated[str, "batch"] = 1
        t: Annotated[int] = 1
        u: Annotated[undefined_name, "x"] = 1
        v: Annotated["int", "batch in"] = "no"
        w: OptionalAlias = None


    def g(x: Annotated[T, "tv"]) -> T:
        return x


    reveal_type(g(1.5))
    """
)


def _mypy(tmp_path: Path, source: str, *, plugin: bool, name: str = "program.py") -> str:
    config = tmp_path / ("with.ini" if plugin else "without.ini")
    config.write_text(
        "[mypy]\n" + ("plugins = typed_xmap.plugin\n" if plugin else "") + f"mypy_path = {ROOT / 'stubs'}\n"
    )
    program = tmp_path / name
    program.write_text(source)
    stdout, stderr, _ = api.run(
        ["--config-file", str(config), "--no-incremental", "--strict", "--no-error-summary", str(program)]
    )
    return stdout + stderr


def test_ordinary_annotated_is_untouched(tmp_path):
    without = _mypy(tmp_path, ORDINARY_ANNOTATED, plugin=False)
    with_plugin = _mypy(tmp_path, ORDINARY_ANNOTATED, plugin=True)
    assert "INTERNAL ERROR" not in with_plugin
    assert with_plugin == without
    # the suite exercises errors and notes, not only clean code
    for expected in ("[valid-type]", "[typeddict-item]", "[assignment]", "Revealed type is", "[name-defined]"):
        assert expected in without, expected


def test_typed_xmap_annotated_is_taken_over(tmp_path):
    source = (
        'from typed_xmap import NamedArray, f32\ndef f(x: NamedArray[f32, "batch=3"]) -> None:\n    reveal_type(x)\n'
    )
    assert 'Revealed type is "NamedArray[f32, "batch=3"]"' in _mypy(tmp_path, source, plugin=True)
    assert "NamedArray_[numpy.floating[numpy._typing._nbit_base._32Bit], Any, Any]" in _mypy(
        tmp_path, source, plugin=False
    )


PYDANTIC_USER = textwrap.dedent(
    """
    from typing import Annotated
    from pydantic import BaseModel, Field, PositiveInt, conint
    from pydantic.functional_validators import AfterValidator

    Even = Annotated[int, AfterValidator(lambda v: v), Field(multiple_of=2)]

    class User(BaseModel):
        id: PositiveInt
        name: Annotated[str, Field(min_length=1, description="name")]
        score: Annotated[float, Field(gt=0)] = 1.0
        even: Even = 2

    u = User(id=1, name="x")
    reveal_type(u.name)
    reveal_type(u.even)
    bad: Annotated[int, Field(gt=0)] = "x"
    """
)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pydantic") is None, reason="pydantic is not installed")
def test_installed_package_using_annotated_heavily(tmp_path):
    """pydantic's own sources (Annotated everywhere) and code using them: identical with and without."""
    without = _mypy(tmp_path, PYDANTIC_USER, plugin=False)
    with_plugin = _mypy(tmp_path, PYDANTIC_USER, plugin=True)
    assert "INTERNAL ERROR" not in with_plugin
    assert with_plugin == without
    assert "Revealed type is" in without and "[assignment]" in without
    package = Path(importlib.util.find_spec("pydantic").origin).parent  # type: ignore[arg-type,union-attr]
    outputs = []
    for plugin in (False, True):
        config = tmp_path / f"pkg{plugin}.ini"
        config.write_text("[mypy]\n" + ("plugins = typed_xmap.plugin\n" if plugin else ""))
        stdout, stderr, _ = api.run(
            [
                "--config-file",
                str(config),
                "--no-incremental",
                "--follow-imports=silent",
                "--no-error-summary",
                str(package / "types.py"),
                str(package / "fields.py"),
                str(package / "functional_validators.py"),
            ]
        )
        outputs.append(stdout + stderr)
    assert "INTERNAL ERROR" not in outputs[1]
    assert outputs[0] == outputs[1]
