"""The memory of the devices at hand, and the check every array-making operation runs before JAX is asked.

The limit (``_algebra``'s ``check_allocation`` says why there is one) is the memory of every device JAX sees,
together: on CPU the host's physical memory once per process (emulated CPU devices share it); on GPU/TPU the
sum of each device's ``bytes_limit`` (``memory_stats()``), the local devices' figure times the device count
when some devices are another process's. Where neither is known, only the int64 bound applies.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from .._algebra import INT64_MAX, Size, check_allocation

__all__ = ["allocatable", "device_memory"]


@functools.cache
def device_memory() -> tuple[int, str]:
    """The bytes every device JAX sees can hold together, and what they are (for the message)."""
    devices = jax.devices()
    platform = devices[0].platform
    where = f"the {len(devices)} {platform} device{'s' if len(devices) != 1 else ''}"
    if platform == "cpu":
        pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else -1
        total = pages * os.sysconf("SC_PAGE_SIZE") if pages > 0 else INT64_MAX
        return total * jax.process_count(), f"{where} (the host's memory)"
    local = jax.local_devices()
    limits = [(d.memory_stats() or {}).get("bytes_limit", 0) for d in local]
    if not all(limits):
        return INT64_MAX, where
    return sum(limits) * len(devices) // len(local), where


def allocatable(named: Mapping[str, Size], dtype: Any, *, operation: str, positional: tuple[int, ...] = ()) -> None:
    """A value of ``named`` shape (then ``positional`` dims) and ``dtype`` fits the devices' memory, or a
    ``NamedShapeError`` naming ``operation``."""
    limit, where = device_memory()
    itemsize = np.dtype(dtype if dtype is not None else np.float32).itemsize
    check_allocation(named, positional, itemsize, limit, operation=operation, where=where)
