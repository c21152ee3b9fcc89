"""The symbol algebra (``typed_xmap._algebra._symbols``) against integers: random size expressions over a few
config atoms are built with ``size_add``/``size_mul``/``size_floordiv`` (as the plugin reads ``cfg.k // 2``)
and evaluated with Python's ints under random configs. Whatever the symbols judge must hold for every config:
a symbol is the expression's value, two symbols judged equal are equal, two judged to differ differ."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from hypothesis import given, settings, strategies as st

from typed_xmap._algebra import (
    StaticSize,
    SymbolicSize,
    format_size,
    parse_size,
    size_add,
    size_floordiv,
    size_mul,
    sizes_differ,
    symbol,
)

ATOMS = ("cfg.k", "n")


@dataclass(frozen=True)
class Expr:
    """A size expression as a user writes it: an atom, an int, or ``left op right``."""

    op: str
    left: object = None
    right: object = None

    def static(self) -> StaticSize:
        """What the plugin reads (``_sizes.static_size``'s arithmetic)."""
        if self.op == "atom":
            return symbol(str(self.left))
        if self.op == "int":
            return int(self.left)  # type: ignore[call-overload]
        a, b = self.left.static(), self.right.static()  # type: ignore[union-attr]
        if self.op == "+":
            return size_add(a, b)
        if self.op == "-":
            return size_add(a, -b) if isinstance(b, int) else None
        if self.op == "*":
            return size_mul(a, b)
        return size_floordiv(a, b)

    def value(self, config: dict[str, int]) -> int | None:
        """Its value under ``config`` (``None`` where Python would divide by zero or less)."""
        if self.op == "atom":
            return config[str(self.left)]
        if self.op == "int":
            return int(self.left)  # type: ignore[call-overload]
        a, b = self.left.value(config), self.right.value(config)  # type: ignore[union-attr]
        if a is None or b is None:
            return None
        if self.op == "//":
            return a // b if b > 0 else None
        return a + b if self.op == "+" else a - b if self.op == "-" else a * b


def _expressions(atoms: tuple[str, ...] = ATOMS) -> st.SearchStrategy[Expr]:
    leaves = st.one_of(
        st.sampled_from(atoms).map(lambda a: Expr("atom", a)),
        st.integers(0, 6).map(lambda i: Expr("int", i)),
    )

    def grow(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        small = st.integers(1, 5).map(lambda i: Expr("int", i))
        return st.one_of(
            st.builds(Expr, st.just("+"), children, children),
            st.builds(Expr, st.just("-"), children, small),
            st.builds(Expr, st.just("*"), children, children),
            st.builds(Expr, st.just("//"), children, st.one_of(small, children)),
        )

    return st.recursive(leaves, grow, max_leaves=6)


CONFIGS = st.lists(st.fixed_dictionaries({a: st.integers(1, 40) for a in ATOMS}), min_size=1, max_size=25)


def _values(expr: Expr, configs: list[dict[str, int]]) -> list[int | None]:
    return [expr.value(config) for config in configs]


def _printed_value(size: SymbolicSize, config: dict[str, int]) -> int:
    """A symbol as printed (``2 * (cfg.k // 2) + 1``), read as Python under ``config``."""
    names = {"cfg": SimpleNamespace(k=config["cfg.k"]), "n": config["n"]}
    return int(eval(format_size(size), {"__builtins__": {}}, names))


@settings(max_examples=500, deadline=None)
@given(_expressions(), CONFIGS)
def test_a_symbol_is_its_expression_for_every_config(x, configs):
    """So two symbols judged equal (one canonical form) are equal for every config."""
    a = x.static()
    values = _values(x, configs)
    if isinstance(a, SymbolicSize):
        assert parse_size(format_size(a)) == a
        assert [_printed_value(a, c) for c, v in zip(configs, values, strict=True) if v is not None] == [
            v for v in values if v is not None
        ], format_size(a)
    if isinstance(a, int):
        assert all(v in (a, None) for v in values)


def _derived(expr: Expr, steps: list[tuple[str, int]]) -> Expr:
    """``expr`` through a few arithmetic steps with small ints (``2 * (n // 2) + 1`` from ``n``)."""
    for op, number in steps:
        expr = Expr(op, Expr("int", number), expr) if op == "*" and number % 2 else Expr(op, expr, Expr("int", number))
    return expr


STEPS = st.lists(st.tuples(st.sampled_from(["+", "-", "*", "//"]), st.integers(1, 4)), min_size=1, max_size=3)
PAIRS = st.one_of(
    st.tuples(_expressions(), _expressions()),
    st.tuples(_expressions(("n",)), _expressions(("n",))),  # one atom: mostly symbols over the same atoms
    st.builds(lambda e, a, b: (_derived(e, a), _derived(e, b)), _expressions(("n",)), STEPS, STEPS),
)


@settings(max_examples=1500, deadline=None)
@given(PAIRS, CONFIGS)
def test_symbols_judged_to_differ_differ_for_every_config(pair, configs):
    x, y = pair
    a, b = x.static(), y.static()
    if sizes_differ(a, b):
        assert sizes_differ(b, a)
        pairs = [(u, v) for u, v in zip(_values(x, configs), _values(y, configs), strict=True) if None not in (u, v)]
        assert all(u != v for u, v in pairs), (format_size(a), format_size(b), pairs)


def test_floor_division_is_never_simplified_unless_exact():
    k = symbol("cfg.k")
    odd = size_add(size_mul(2, size_floordiv(k, 2)), 1)
    assert format_size(odd) == "2 * (cfg.k // 2) + 1"
    assert not sizes_differ(odd, size_add(k, 1)) and odd != size_add(k, 1)  # equal for an even cfg.k
    assert not sizes_differ(odd, k)  # equal for an odd cfg.k
    assert format_size(size_mul(size_floordiv(k, 4), 2)) == "2 * (cfg.k // 4)"
    assert format_size(size_floordiv(size_floordiv(k, 2), 2)) == "cfg.k // 4"  # exact: floor(floor(k/2)/2)
    assert format_size(size_floordiv(size_add(k, 1), 2)) == "((cfg.k + 1) // 2)"
    assert sizes_differ(k, size_floordiv(k, 2)) and sizes_differ(size_mul(2, k), k)
    assert not sizes_differ(k, size_add(size_floordiv(k, 2), 1))  # equal for cfg.k = 2
    # a floor division against its own base: bounded, never exact
    assert sizes_differ(odd, size_add(k, 2)) and sizes_differ(size_add(k, 2), odd)  # odd <= cfg.k + 1
    assert sizes_differ(size_mul(4, size_floordiv(k, 2)), size_mul(4, k))  # gates * (hidden // 2) vs gates * hidden
    half = size_floordiv(k, 2)
    assert not sizes_differ(half, size_mul(2, half))  # both 0 for cfg.k = 1
