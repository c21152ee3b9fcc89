"""Sizes shared by the set-1 programs (tiny, for a quick run on CPU)."""

from typing import Final

BATCH: Final = 8
HIDDEN: Final = 16
LEARNING_RATE: Final = 0.05
