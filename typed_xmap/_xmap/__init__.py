"""``tx.xmap``: the original ``jax.experimental.maps.xmap`` on modern JAX (README.md here: how the modules fit)."""

from .._algebra import SerialLoop
from ._api import XmapFunction, xmap
from ._loops import serial_loop

__all__ = ["SerialLoop", "XmapFunction", "serial_loop", "xmap"]
