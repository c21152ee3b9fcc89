"""Emulate 8 CPU devices before anything imports jax; keep each worker's heap small between tests."""

import gc
import os
import sys
import time
from pathlib import Path

import pytest

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from hypothesis import settings

# CI shares 2 cores with XLA compiles: time limits per example would only measure the machine's load.
settings.register_profile("typed_xmap", deadline=None)
settings.load_profile("typed_xmap")

GC_THRESHOLD = gc.get_threshold()
"""Python's collection thresholds as the worker started. An in-process mypy run (``mypy.api.run``, the yml cases
of pytest-mypy-plugins) sets them to ``(200000, 30, 30)`` for the rest of the process: a full collection then
(almost) never runs by itself, every later run's trees pile up as garbage (a worker reached 14 GB), and each
explicit collection walks tens of millions of objects."""


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After each test (yml cases included), before its fixtures are torn down: Python's own thresholds back, and
    mypy's hold on its last run dropped. mypy moves what a run allocates into the oldest generation, where no
    automatic collection counts it: the trees of every run pile up as garbage until a collection here frees them
    (each collection costs about the garbage it finds, so one per gigabyte rather than one per run)."""
    gc.set_threshold(*GC_THRESHOLD)
    gc.enable()  # mypy's load_graph disables collection and does not enable it again when a run fails
    _release_mypy_globals()
    _collect_once_grown(item.nodeid)


def _release_mypy_globals() -> None:
    """Drop what an in-process mypy run leaves in module globals after it returns: ``modules_state`` (every
    module's tree of the last run) and ``type_state`` (caches keyed by its classes). mypy resets both at the start
    of its next run (``BuildManager``, ``reset_global_state``): doing it now lets the next collection free that run's
    trees, and no later run can tell."""
    modules_state = getattr(sys.modules.get("mypy.modules_state"), "modules_state", None)
    if modules_state is None or not modules_state.modules:
        return
    modules_state.modules = {}
    modules_state.node_fixer = None
    typestate = sys.modules["mypy.typestate"]
    typestate.reset_global_state()
    typestate.type_state.reset_protocol_deps()


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A mypy cache folder (``--cache-dir``) for this worker's checks: a cold check reads jax's and the stubs'
    sources (tens of seconds on CI), a check from the cache does not. mypy keys each module's entry by its path,
    contents and the options that affect it, so checks of different programs share it safely; one per set of
    flags and config (``mypy_cache / "check-strict"``: ``typed-xmap check --strict`` without a config file) keeps
    them from overwriting each other's entries: a folder shared by two sets of options makes each check rewrite
    every entry (jax's and the stubs' too), as cold as a new folder, and an in-process check then leaves millions
    of objects to the collector. One test runs at a time in a worker, and each xdist worker has its own folder."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs(request: pytest.FixtureRequest):
    """After each test module, drop JAX's compiled programs and traces: a worker runs hundreds of modules, and
    their caches grew one process past 18 GB (an out-of-memory kill on a 24 GB machine). Recompiling what a later
    module needs again costs far less than that. A full collection walks the worker's whole heap, so it runs only
    once the process grew by ``COLLECT_AFTER_GROWTH`` since the last one (Python's own collections free the rest).
    ``TYPED_XMAP_TEST_GC_LOG=PREFIX`` writes what each step cost to ``PREFIX.<worker>``."""
    yield
    started = time.perf_counter()
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    _log(f"{request.module.__name__}: clear_caches {time.perf_counter() - started:.2f} s")
    _collect_once_grown(request.module.__name__)


def _collect_once_grown(after: str) -> None:
    """A full collection (timed in the log) once the process grew by ``COLLECT_AFTER_GROWTH`` since the last."""
    started, resident = time.perf_counter(), _resident_bytes()
    if resident <= _LAST_COLLECTION[0] + COLLECT_AFTER_GROWTH:
        return
    found = gc.collect()
    _LAST_COLLECTION[0] = _resident_bytes()
    _log(f"{after}: collect {time.perf_counter() - started:.2f} s, {found} objects, resident {resident >> 20} MiB")


def _log(line: str) -> None:
    log = os.environ.get("TYPED_XMAP_TEST_GC_LOG")
    if log:
        with open(f"{log}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "a") as out:
            out.write(line + "\n")


COLLECT_AFTER_GROWTH = 1 << 30
_LAST_COLLECTION = [0]
"""The resident bytes after the last full collection this fixture ran (0 before the first)."""


def _resident_bytes() -> int:
    """This process's resident memory (Linux's /proc); where it cannot be read, as if it had grown enough."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return _LAST_COLLECTION[0] + COLLECT_AFTER_GROWTH + 1
