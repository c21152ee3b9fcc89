#!/usr/bin/env bash
# Issue 27 item 6, on a lent accelerator machine (Python 3.12 and its own JAX there): install typed_xmap and the
# test dependencies that machine lacks (wheels carried in .whl/: `pip download --no-deps` of each, mypy's own
# dependencies included (ast-serialize, librt), and `pip wheel --no-deps .`), run the
# demo, the GPU train steps against jnp (bench/gpu_steps.py), then the suite's fast part on 16 cores
# (the 8 emulated CPU devices of tests/conftest.py: the suite never needs the GPU). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl 2>&1 | tail -3
python3 -c "import jax, sys; print('python', sys.version.split()[0], 'jax', jax.__version__, jax.devices())"
timeout 60 typed-xmap demo > "$OUT/demo.log" 2>&1; echo "demo exit $?"; tail -3 "$OUT/demo.log"
PYTHONPATH=. timeout "${BENCH_S:-240}" python3 bench/gpu_steps.py ${BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu_steps.log"
timeout "${SUITE_S:-270}" python3 -m pytest -q -n 16 -m "not slow" -p no:cacheprovider --durations=30 \
  --ignore=tests/test_self_checks.py --ignore=tests/test_pyright_users.py --ignore=tests/test_editor_setups.py \
  --ignore=tests/test_install.py > "$OUT/suite.log" 2>&1
echo "suite exit $?"; grep -E "passed|failed" "$OUT/suite.log" | tail -3
grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | head -30
