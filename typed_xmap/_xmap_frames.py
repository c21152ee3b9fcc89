"""Kept only for ``_named_array``'s import of ``varying_mapped`` until that line points at ``_xmap._frames``."""

from ._xmap._frames import varying_mapped

__all__ = ["varying_mapped"]
