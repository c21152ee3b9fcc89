"""Emulate 8 CPU devices before anything imports jax."""

import gc
import os
import sys

import pytest

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from hypothesis import settings

# CI shares 2 cores with XLA compiles: time limits per example would only measure the machine's load.
settings.register_profile("typed_xmap", deadline=None)
settings.load_profile("typed_xmap")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After each test module, drop JAX's compiled programs and traces: a worker runs hundreds of modules, and
    their caches grew one process past 18 GB (an out-of-memory kill on a 24 GB machine). Recompiling what a later
    module needs again costs far less than that. A full collection walks the worker's whole heap (mypy's trees of
    every in-process check included): after every module it cost minutes per worker, so it runs only once the
    process holds more than ``COLLECT_ABOVE`` bytes."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    if _resident_bytes() > COLLECT_ABOVE:
        gc.collect()


COLLECT_ABOVE = 4 << 30


def _resident_bytes() -> int:
    """This process's resident memory (Linux's /proc); where it cannot be read, as if above the bound."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return COLLECT_ABOVE + 1
