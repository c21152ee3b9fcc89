"""Emulate 8 CPU devices before anything imports jax."""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from hypothesis import settings

# CI shares 2 cores with XLA compiles: time limits per example would only measure the machine's load.
settings.register_profile("typed_xmap", deadline=None)
settings.load_profile("typed_xmap")
