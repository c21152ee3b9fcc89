"""How a type dmypy reports is shown in hovers and inlay hints: the one place to change it.

``dmypy inspect`` prints mypy's encoding of a NamedArray (``NamedArray_[floating[_32Bit],
Shape_[Literal['batch=8 mlp=cfg.mlp // 2']], tuple[()]]``), quoted; the server shows it in the annotation
notation (``NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]``) with the plugin's own formatter, the one that
rewords mypy's messages, so hovers, hints and errors read alike. Other types pass through as mypy prints them.
"""

from __future__ import annotations

from ...plugin._core._messages import readable


def format_type(inspected: str) -> str:
    """An inspected type without dmypy's quotes, every NamedArray in it in the annotation notation."""
    bare = inspected[1:-1] if len(inspected) > 1 and inspected[0] == inspected[-1] == '"' else inspected
    return readable(bare)


def is_type(inspected: str) -> bool:
    """An inspection answer that is a type (dmypy answers with a sentence when it has none)."""
    return inspected.startswith('"')
