"""The plugin's error codes (category ``typed_xmap``), and the code each kind of shared-algebra error gets.

Each code works with ``# type: ignore[code]``, ``--disable-error-code code`` and ``disable_error_code``
in a mypy config file.
"""

from __future__ import annotations

from mypy.errorcodes import ErrorCode

from ..._algebra import ErrorKind, NamedShapeError

__all__ = [
    "ALL_CODES",
    "AXIS_RESOURCE_CONFLICT",
    "NAMED_AXIS_MISSING",
    "NAMED_AXIS_SIZE",
    "NAMED_COMM",
    "NAMED_SHAPE_SYNTAX",
    "NAMED_SHAPE_UNKNOWN",
    "POSITIONAL_SHAPE",
    "code_for",
    "one_line",
]

CATEGORY = "typed_xmap"

NAMED_SHAPE_SYNTAX = ErrorCode(
    "named-shape-syntax", "A NamedArray spec, einsum spec or axis argument does not parse", CATEGORY
)
NAMED_AXIS_SIZE = ErrorCode("named-axis-size", "One axis name has two different sizes", CATEGORY)
NAMED_AXIS_MISSING = ErrorCode("named-axis-missing", "An operation names an axis the value does not carry", CATEGORY)
POSITIONAL_SHAPE = ErrorCode("positional-shape", "Positional dims do not broadcast or match", CATEGORY)
AXIS_RESOURCE_CONFLICT = ErrorCode(
    "axis-resource-conflict", "Two named axes on one mesh axis meet in one value", CATEGORY
)

NAMED_SHAPE_UNKNOWN = ErrorCode(
    "named-shape-unknown",
    "A note where a NamedArray's named shape becomes unknown, with its cause (opt in: typed-xmap check --unknowns)",
    CATEGORY,
    default_enabled=False,
)

NAMED_COMM = ErrorCode(
    "named-comm",
    "A note where placement forces a collective: its kind, mesh axes and cause (opt in: typed-xmap check --comm)",
    CATEGORY,
    default_enabled=False,
)

ALL_CODES = (
    NAMED_SHAPE_SYNTAX,
    NAMED_AXIS_SIZE,
    NAMED_AXIS_MISSING,
    POSITIONAL_SHAPE,
    AXIS_RESOURCE_CONFLICT,
    NAMED_SHAPE_UNKNOWN,
    NAMED_COMM,
)


CODE_OF_KIND: dict[ErrorKind, ErrorCode] = {
    ErrorKind.SYNTAX: NAMED_SHAPE_SYNTAX,
    # a literal argument the plugin reads (a spec leaf, axis_resources, axis=) is not a valid one
    ErrorKind.INVALID_ARGUMENT: NAMED_SHAPE_SYNTAX,
    ErrorKind.AXIS_SIZE: NAMED_AXIS_SIZE,
    ErrorKind.AXIS_MISSING: NAMED_AXIS_MISSING,
    ErrorKind.UNBOUND_AXIS: NAMED_AXIS_MISSING,
    ErrorKind.POSITIONAL: POSITIONAL_SHAPE,
    # never met statically (mypy's own types carry dtypes; only @tx.typed raises it); a code for totality
    ErrorKind.DTYPE: POSITIONAL_SHAPE,
    ErrorKind.RESOURCE_CONFLICT: AXIS_RESOURCE_CONFLICT,
    ErrorKind.PLACEMENT: AXIS_RESOURCE_CONFLICT,
}
"""The plugin's code for each kind of shared-algebra error; every ``ErrorKind`` has one."""


def code_for(error: NamedShapeError) -> ErrorCode:
    """The code of an error raised by the shared named-shape algebra: chosen by the kind it was raised with."""
    return CODE_OF_KIND[error.kind]


def one_line(error: Exception) -> str:
    """A shared-algebra message on one line (mypy prints one line per error).

    Syntax errors underline the bad token on two extra lines; mypy output cannot show that, so the
    problem and the fix are joined instead.
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else type(error).__name__
    fix = [line for line in lines[1:] if line.startswith("fix:")]
    return lines[0] + ("; " + fix[0] if fix else "")
