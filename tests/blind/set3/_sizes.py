"""Sizes shared by the programs of this set (tiny, for a quick run on CPU)."""

from __future__ import annotations

from typing import Final

TINY_BATCH: Final = 8
FLOW_DIM: Final = 6
TOWER_EMBED: Final = 16
N_USERS: Final = 32
N_ITEMS: Final = 48
ODE_STATE: Final = 3
FRAME_SIZE: Final = 8
N_POINTS: Final = 6
