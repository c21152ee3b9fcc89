"""xmap across two local processes (jax.distributed, 4 CPU devices each, gloo): local slices or global arrays in."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "multiprocess" / "xmap_worker.py"
TIMEOUT = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_xmap_across_two_processes():
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("XLA_FLAGS", None)
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(i), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    outputs = []
    try:
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"an xmap worker did not finish within {TIMEOUT}s (dead peer or hung collective)")
            outputs.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for i, (code, out, err) in enumerate(outputs):
        assert code == 0 and f"OK {i}" in out, f"worker {i} failed (exit {code}):\n{out}\n{err[-3000:]}"


@pytest.mark.slow
def test_dead_peer_is_a_clear_error_not_a_hang():
    """Only process 0 starts: initialize() gives up after its timeout with an error."""
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).parent.parent) + os.pathsep + env.get("PYTHONPATH", "")
    code = (
        f"import jax; jax.distributed.initialize(coordinator_address='127.0.0.1:{port}', num_processes=2, "
        "process_id=0, initialization_timeout=5)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=90, env=env
    )
    assert proc.returncode != 0
