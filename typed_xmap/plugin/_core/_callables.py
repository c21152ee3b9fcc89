"""What a call of a value takes, as the checker reads it: a function's signature, or a ``functools.partial``'s
(what is left to pass: mypy's own ``functools.partial`` support keeps it in an extra attribute); and
``tx.scan``'s ``f`` read that way (the scan hook while checking, the declared-placement check after it).
"""

from __future__ import annotations

from mypy.types import CallableType, Instance, Type, get_proper_type

__all__ = ["PARTIAL_CALL", "SCAN", "called_signature", "scanned_body"]

SCAN = frozenset({"typed_xmap.scan", "typed_xmap._ops._scan.scan"})
"""``tx.scan`` by full name (the stubs' and the runtime module's)."""
PARTIAL_CALL = "__mypy_partial"
"""The extra attribute mypy gives a ``functools.partial``: the signature of what is left to pass."""


def scanned_body(found: Type | None) -> CallableType | None:
    """The signature of ``f``, of type ``found``, when it takes a carry and a slice (of a ``functools.partial``:
    what is left to pass)."""
    typ = called_signature(found)
    if typ is not None and not typ.is_type_obj() and len(typ.arg_types) >= 2:
        return typ
    return None


def called_signature(found: Type | None) -> CallableType | None:
    """The signature a call of a value of type ``found`` takes: a function's, a ``functools.partial``'s (what is
    left to pass, as mypy reads it)."""
    typ = get_proper_type(found)
    if isinstance(typ, Instance) and typ.extra_attrs is not None:
        typ = get_proper_type(typ.extra_attrs.attrs.get(PARTIAL_CALL))
    return typ if isinstance(typ, CallableType) else None
