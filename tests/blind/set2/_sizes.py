"""Sizes and mesh layout shared by the set's programs (a real project keeps these in one module)."""

from __future__ import annotations

from typing import Final

DATA_PARALLEL: Final = 4
MODEL_PARALLEL: Final = 2
MESH_AXES: Final = ("data", "model")

TINY_BATCH: Final = 8
TINY_HIDDEN: Final = 16
LEARNING_RATE: Final = 1e-2
