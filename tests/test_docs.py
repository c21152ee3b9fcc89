"""The docs: every ```python block runs (page by page, in order), and mkdocs builds strictly."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


RUNNER = """
import os, sys, traceback
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
namespace = {"__name__": "__main__"}
for index, block in enumerate(BLOCKS):
    try:
        exec(compile(block, f"{PAGE}[block {index}]", "exec"), namespace)
    except Exception:
        print(f"--- {PAGE} block {index} failed:\\n{block}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
"""


def _run_page(page: Path, tmp_path: Path, devices: int) -> None:
    blocks = BLOCK.findall(page.read_text())
    if not blocks:
        pytest.skip("no python blocks")
    script = tmp_path / "page.py"
    script.write_text(f"BLOCKS = {blocks!r}\nPAGE = {str(page.relative_to(ROOT))!r}\nDEVICES = {devices}\n" + RUNNER)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_code_blocks_run(page, tmp_path):
    """Each page runs as a reader would run it: its blocks in order, in a fresh Python with 8 CPU devices."""
    _run_page(page, tmp_path, 8)


MESH_PAGES = [p for p in PAGES if "tx.fitting_mesh(" in p.read_text()]


@pytest.mark.slow
@pytest.mark.parametrize("page", MESH_PAGES, ids=[str(p.relative_to(ROOT)) for p in MESH_PAGES])
def test_pages_with_a_mesh_run_on_one_device(page, tmp_path):
    """A reader with one device (a laptop, one GPU) runs the pages too: their meshes fit (``tx.fitting_mesh``)."""
    _run_page(page, tmp_path, 1)


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), "mkdocs is not installed beside this Python: pip install -e '.[test]' installs it"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_api_reference_names_only_public_paths():
    """``::: typed_xmap._xmap.xmap`` would break when a private module moves: the reference uses public names."""
    identifiers = re.findall(r"^::: (\S+)", (ROOT / "docs" / "api.md").read_text(), re.M)
    assert "typed_xmap.xmap" in identifiers and "typed_xmap.numpy.sum" in identifiers
    private = [name for name in identifiers if any(part.startswith("_") for part in name.split("."))]
    assert not private, f"docs/api.md documents private paths: {private}"
