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
    module needs again costs far less than that."""
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    gc.collect()
