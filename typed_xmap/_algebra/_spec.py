"""The annotation spec language: ``"batch=32 in_features"`` and positional dims ``"n 3"``.

``NamedArray[f32, "batch=32 in_features", "n 3"]`` holds two spec strings. The first lists named axes
(order-free; ``name`` or ``name=SIZE``), and at most one variadic group ``*name``: ``"*rest embed"`` is
``embed`` and any other named axes, the group ``rest`` binding which (names and sizes, once per call).
The second lists positional dims, in order: an integer, a symbol bound to one size for the whole call,
``_`` for any size, or ``...`` for any number of dims.

A named axis may carry its placement: ``"batch@data=32 seq"`` is ``batch`` split over the mesh axis
``data``; ``"batch@(x,y)"`` over the mesh axes ``x`` and ``y``, major to minor; ``"batch@()"`` over none: known
*whole* (replicated on every device, the ``PartitionSpec`` entry ``None``). An axis without ``@`` has an unknown
placement (gradual: it is never checked). A known-whole axis is shown as its plain name (``shown_spec``), as JAX
prints an unsplit dim.

Pure Python, shared by the runtime checker and the mypy plugin.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._errors import NamedShapeSyntaxError

__all__ = [
    "ANY_DIM",
    "GROUP_PREFIX",
    "MANY_DIMS",
    "AxisSpec",
    "ShapeSpec",
    "format_mesh_axes",
    "format_named_shape",
    "format_placed_name",
    "is_axis_name",
    "is_whole",
    "parse_named_axes",
    "parse_positional",
    "parse_shape_spec",
    "partition_entry",
    "shown_spec",
    "syntax_error",
]

ANY_DIM = "_"
MANY_DIMS = "..."
GROUP_PREFIX = "*"
"""``"*rest embed"``: the group ``rest``; its binding's key is ``"*rest"`` (never an axis name)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SIZE = re.compile(r"[0-9]+\Z")
MAX_SIZE = 2**63 - 1
"""The largest size an array dim can have (XLA's dims are int64); a larger one is a slip, not a shape."""
_TOKEN = re.compile(r"(?:\([^)]*\)|[^\s(])+|\(")
"""A token: anything up to whitespace, a parenthesized list of mesh axes (``@(x, y)``) kept whole."""
_OUTER_COMMA = re.compile(r",(?![^()]*\))")
"""A comma outside parentheses: it separates names (inside ``@(x,y)`` it separates mesh axes)."""
_MESH_SEPARATOR = re.compile(r"[\s,]+")
_WHOLE_TEXT = re.compile(r"\(\s*\)\Z")
"""``@()``: the empty tuple of mesh axes, a known-whole axis."""
_WHOLE_MARK = re.compile(r"@\(\s*\)")


def is_axis_name(name: object) -> bool:
    """Whether ``name`` can name an axis: a Python identifier, as in ``NamedArray[f32, "batch in_features"]``."""
    return isinstance(name, str) and _NAME.match(name) is not None


PositionalDim = int | str
"""An int (a fixed size), a symbol name, ``ANY_DIM`` or ``MANY_DIMS``."""


def format_mesh_axes(mesh_axes: Sequence[str]) -> str:
    """``("data",)`` -> ``"data"``; ``("x", "y")`` -> ``"(x,y)"`` (JAX's notation, one token); ``()`` (whole)
    -> ``"()"``."""
    return mesh_axes[0] if len(mesh_axes) == 1 else f"({','.join(mesh_axes)})"


def partition_entry(mesh_axes: Sequence[str]) -> str | tuple[str, ...] | None:
    """Where an axis split over ``mesh_axes`` is placed, as a ``PartitionSpec`` entry and as users write a
    mapping's value (``axis_resources``): one mesh axis by its name, several as a tuple, none as ``None``."""
    return None if not mesh_axes else mesh_axes[0] if len(mesh_axes) == 1 else tuple(mesh_axes)


def is_whole(mesh_axes: Sequence[str] | None) -> bool:
    """Whether a placement is known whole: split over no mesh axis (``()``); ``None`` (unknown) is not."""
    return mesh_axes is not None and not mesh_axes


def format_placed_name(name: str, mesh_axes: Sequence[str] | None) -> str:
    """``"batch"`` placed on ``("data",)`` -> ``"batch@data"``; known whole (``()``) -> ``"batch@()"`` (the
    notation, which ``shown_spec`` shows as ``"batch"``); unknown placement (``None``): the name alone."""
    return name if mesh_axes is None else f"{name}@{format_mesh_axes(mesh_axes)}"


def shown_spec(text: str) -> str:
    """A named shape in the notation as types, hovers and messages show it: a known-whole axis as its plain
    name (``"batch@data seq@() embed"`` -> ``"batch@data seq embed"``)."""
    return _WHOLE_MARK.sub("", text) if "@" in text else text


@dataclass(frozen=True, slots=True)
class AxisSpec:
    """One named axis of an annotation: its name, its size and its placement (the mesh axes it is split
    over), each when declared."""

    name: str
    size: int | None = None
    placement: tuple[str, ...] | None = None

    def __str__(self) -> str:
        name = format_placed_name(self.name, self.placement)
        return name if self.size is None else f"{name}={self.size}"


@dataclass(frozen=True, slots=True)
class ShapeSpec:
    """A parsed annotation: named axes (order-free), positional dims (``None``: unconstrained), and the
    variadic group's name (``"rest"`` for ``"*rest embed"``; ``None``: the named axes are exactly ``axes``)."""

    axes: tuple[AxisSpec, ...]
    positional: tuple[PositionalDim, ...] | None = None
    group: str | None = None

    @property
    def group_key(self) -> str | None:
        """The group's key in bindings and named shapes: ``"*rest"``."""
        return None if self.group is None else GROUP_PREFIX + self.group

    @property
    def axis_names(self) -> frozenset[str]:
        return frozenset(a.name for a in self.axes)

    @property
    def placement(self) -> dict[str, tuple[str, ...]]:
        """The placements the spec declares (``"batch@data"``: ``{"batch": ("data",)}``); the others unknown."""
        return {a.name: a.placement for a in self.axes if a.placement is not None}

    def named_text(self) -> str:
        group = [] if self.group_key is None else [self.group_key]
        return " ".join([*group, *(str(a) for a in self.axes)])

    def positional_text(self) -> str | None:
        if self.positional is None:
            return None
        return " ".join(str(d) for d in self.positional)

    def __str__(self) -> str:
        text = repr(self.named_text())
        positional = self.positional_text()
        return text if positional is None else f"{text}, {positional!r}"


def syntax_error(spec: str, start: int, end: int, problem: str, fix: str) -> NamedShapeSyntaxError:
    """An error that quotes ``spec`` and underlines ``spec[start:end]`` (around them only, in a long spec)."""
    spec, start, end = _excerpt(spec, start, end)
    width = max(end - start, 1)
    caret = " " * start + "^" * width
    return NamedShapeSyntaxError(f"invalid spec {spec!r}: {problem}\n    {spec}\n    {caret}\nfix: {fix}")


def _excerpt(spec: str, start: int, end: int, context: int = 40) -> tuple[str, int, int]:
    """``spec`` cut to ``context`` characters around ``spec[start:end]`` (itself cut to ``context``) when long."""
    if len(spec) <= 3 * context:
        return spec, start, end
    end = min(end, start + context)
    first, last = max(0, start - context), min(len(spec), end + context)
    shift = 3 if first else 0
    text = ("..." if first else "") + spec[first:last] + ("..." if last < len(spec) else "")
    return text, start - first + shift, end - first + shift


def _tokens(spec: str) -> list[re.Match[str]]:
    if not isinstance(spec, str):
        raise NamedShapeSyntaxError(
            f'a named-shape spec must be a string such as "batch=32 features", got {spec!r} '
            f'of type {type(spec).__name__}. Fix: write the names in one string, separated by spaces or commas; "" '
            f"for none"
        )
    tokens = list(_TOKEN.finditer(_OUTER_COMMA.sub(" ", spec)))
    if not tokens and "," in spec:
        # "" is the empty shape; commas only separate names, so a spec of separators alone is a slip
        raise syntax_error(
            spec,
            spec.index(","),
            len(spec.rstrip()),
            "commas separate names, but there are none",
            'write "" for no names, or names between the commas: "batch, features"',
        )
    return tokens


def parse_named_axes(spec: str) -> tuple[AxisSpec, ...]:
    """Parse ``"batch=32 in_features"`` into axis specs; commas also separate tokens."""
    axes: list[AxisSpec] = []
    seen: dict[str, int] = {}
    for match in _tokens(spec):
        token = match.group()
        placed, eq, size_text = token.partition("=")
        name, _, where = placed.partition("@")
        placement = _placement(spec, match.start() + len(name) + 1, where) if "@" in placed else None
        if not _NAME.match(name):
            raise syntax_error(
                spec,
                match.start(),
                match.start() + len(name) if name else match.end(),
                f"{name or token!r} is not an axis name",
                'axis names are Python identifiers, optionally with a size: "batch=32 in_features"',
            )
        size: int | None = None
        if eq:
            if not _SIZE.match(size_text):
                start = match.start() + len(placed) + 1
                raise syntax_error(
                    spec,
                    start,
                    match.end(),
                    f"the size of axis {name!r} must be a non-negative integer, got {size_text!r}",
                    f"write {name}=SIZE with an integer SIZE, or just {name}",
                )
            start = match.start() + len(placed) + 1
            size = _size(spec, start, match.end(), f"the size of axis {name!r}", f"just {name}", size_text)
        if name in seen:
            raise syntax_error(
                spec,
                match.start(),
                match.end(),
                f"axis {name!r} is listed twice",
                "list each named axis once; named axes are order-free",
            )
        seen[name] = match.start()
        axes.append(AxisSpec(name, size, placement))
    return tuple(axes)


def _placement(spec: str, start: int, text: str) -> tuple[str, ...]:
    """The mesh axes after ``@`` (``data`` or ``(x,y)``; ``()``: none, known whole) at ``spec[start:]``,
    validated."""
    if _WHOLE_TEXT.match(text):
        return ()
    inner = text[1:-1] if text.startswith("(") and text.endswith(")") and len(text) > 1 else text
    mesh_axes = tuple(a for a in _MESH_SEPARATOR.split(inner) if a)
    bad = next((a for a in mesh_axes if not _NAME.match(a)), None)
    if not mesh_axes or bad is not None:
        problem = f"{bad!r} is not a mesh axis name" if bad is not None else f"{'@' + text!r} names no mesh axis"
        raise syntax_error(
            spec,
            start - 1,
            start + len(text),
            problem,
            "after @ write the mesh axis the named axis is split over, or a parenthesized tuple of them: "
            '"batch@data seq" or "batch@(x,y) seq" ("batch@()": whole, split over none)',
        )
    if len(set(mesh_axes)) != len(mesh_axes):
        raise syntax_error(
            spec,
            start - 1,
            start + len(text),
            f"{'@' + text!r} lists a mesh axis twice",
            "list each mesh axis once: one named axis is split over distinct mesh axes",
        )
    return mesh_axes


def _size(spec: str, start: int, end: int, what: str, bare: str, text: str) -> int:
    """``text`` (digits) as a size; more than any array dim has raises before ``int()`` refuses the digits."""
    digits = text.lstrip("0")
    if len(digits) > len(str(MAX_SIZE)) or (digits and int(digits) > MAX_SIZE):
        raise syntax_error(
            spec,
            start,
            end,
            f"{what} has {len(digits)} digits, more than any array dim can hold (at most {MAX_SIZE})",
            f"write the real size, or {bare}",
        )
    return int(text)


def parse_positional(spec: str) -> tuple[PositionalDim, ...]:
    """Parse positional dims ``"n 3 _ ..."`` in order."""
    dims: list[PositionalDim] = []
    for match in _tokens(spec):
        token = match.group()
        if _SIZE.match(token):
            what = f"positional dim {len(dims)}"
            dims.append(_size(spec, match.start(), match.end(), what, "a name such as n", token))
        elif token in (ANY_DIM, MANY_DIMS) or _NAME.match(token):
            if token == MANY_DIMS and MANY_DIMS in dims:
                raise syntax_error(
                    spec,
                    match.start(),
                    match.end(),
                    "'...' appears twice",
                    "use '...' at most once among the positional dims",
                )
            dims.append(token)
        else:
            raise syntax_error(
                spec,
                match.start(),
                match.end(),
                f"{token!r} is not a positional dim",
                "positional dims are integers, symbols (bound per call), '_' (any size) or '...'",
            )
    return tuple(dims)


def parse_shape_spec(named: str, positional: str | None = None) -> ShapeSpec:
    """Parse the two spec strings of a ``NamedArray[...]`` annotation."""
    rest, group = _split_group(named)
    return ShapeSpec(parse_named_axes(rest), None if positional is None else parse_positional(positional), group)


def _split_group(spec: str) -> tuple[str, str | None]:
    """``"*rest embed"`` -> (``"      embed"``, ``"rest"``): the spec with its group token blanked (so errors
    still point into the text the user wrote) and the group's name."""
    group: str | None = None
    text = spec
    for match in _tokens(spec):
        token = match.group()
        if not token.startswith(GROUP_PREFIX):
            continue
        name = token[len(GROUP_PREFIX) :]
        if not _NAME.match(name):
            raise syntax_error(
                spec,
                match.start(),
                match.end(),
                f"{token!r} is not a group: a group is '*' and a name",
                'write one group of the other named axes as *NAME: "*rest embed"',
            )
        if group is not None:
            raise syntax_error(
                spec,
                match.start(),
                match.end(),
                f"a second group {token!r} (after '*{group}')",
                "use at most one *group per spec; it binds all the named axes the spec does not list",
            )
        group = name
        text = text[: match.start()] + " " * len(token) + text[match.end() :]
    return text, group


def format_named_shape(shape: Mapping[str, object] | Sequence[AxisSpec]) -> str:
    """``{'batch': 8, 'in': 4}`` -> ``"batch=8 in=4"`` (the user's notation); a group's binding
    ``{'*rest': {'batch': 8}}`` -> ``"*rest=(batch=8)"``."""
    if isinstance(shape, Mapping):
        return " ".join(
            f"{name}=({format_named_shape(size)})" if isinstance(size, Mapping) else f"{name}={size}"
            for name, size in shape.items()
        )
    return " ".join(str(a) for a in shape)
