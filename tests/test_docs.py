"""The docs: every ```python block runs (page by page, in order), and mkdocs builds strictly."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_code_blocks_run(page, capsys):
    import jax

    blocks = BLOCK.findall(page.read_text())
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    # Pages call jax.set_mesh(mesh) as a global setter; leaving this context undoes that.
    with jax.set_mesh(jax.make_mesh((1,), ("docs_test",))):
        for index, block in enumerate(blocks):
            try:
                exec(compile(block, f"{page.name}[block {index}]", "exec"), namespace)  # noqa: S102
            except Exception as error:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{page.relative_to(ROOT)} block {index} raised {type(error).__name__}: {error}\n{block}")
    assert jax.sharding.get_mesh().empty


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), "mkdocs is not installed beside this Python: pip install -e '.[test]' installs it"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "-d", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
