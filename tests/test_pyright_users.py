"""pyright, as users run it on their own code: realistic correct programs (the examples and the docs' code blocks)
get no error caused by typed_xmap.

No ``stubPath``: pyright finds ``typed_xmap-stubs`` through this environment's install of the package (the
README's ``pip install -e .``; tests/test_install.py covers a wheel), as a user's editor does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PYRIGHT = BIN / "pyright"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# docs/errors.md shows each error the library raises: its blocks are wrong on purpose
DELIBERATELY_WRONG = {ROOT / "docs" / "errors.md"}
# Errors that are not typed_xmap's: optax types params, updates and its state as its ArrayTree alias
# (Array | Iterable | Mapping), which a TypedDict of plain jax.Arrays does not match either (pyright says the
# same of `class P(TypedDict): w: jax.Array`) and no registered pytree node fits (an equinox Module, a flax
# State, a NamedArray): the examples that train with optax, and the optax page, whose every line is about it.
FOREIGN = [
    *[(name, marker) for name in ("transformer.py", "vit.py", "moe.py", "gru.py") for marker in ("optax", '"Params')],
    ("docs_guide_optax.py", ""),
]


def _programs(into: Path) -> list[str]:
    """Copy every example and each docs page's code blocks (one file a page) into ``into``."""
    sources = [*sorted((ROOT / "examples").rglob("*.py")), *sorted((ROOT / "typed_xmap" / "examples").glob("[!_]*.py"))]
    names = []
    for source in sources:
        name = "_".join(source.relative_to(ROOT).with_suffix("").parts) + ".py"
        shutil.copy(source, into / name)
        names.append(name)
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        blocks = BLOCK.findall(page.read_text())
        if blocks and page not in DELIBERATELY_WRONG:
            name = "_".join(page.relative_to(ROOT).with_suffix("").parts).replace("-", "_") + ".py"
            (into / name).write_text("\n".join(blocks))
            names.append(name)
    return names


def _foreign(error: dict[str, object]) -> bool:
    file, message = Path(str(error["file"])).name, str(error["message"])
    return any(file.endswith(suffix) and marker in message for suffix, marker in FOREIGN)


@pytest.mark.slow
@pytest.mark.parametrize("checker", ["pyright", "basedpyright"])
def test_pyright_finds_no_typed_xmap_error_in_realistic_programs(tmp_path: Path, checker: str) -> None:
    """pyright, and basedpyright at pyright's default rules (``standard``; its own default adds style rules)."""
    names = _programs(tmp_path)
    assert len(names) > 20, names
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "standard"}))
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    result = subprocess.run(
        [str(BIN / checker), "--outputjson", "--pythonpath", sys.executable, *names],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
        check=False,
    )
    report = json.loads(result.stdout)
    assert report["summary"]["filesAnalyzed"] == len(names), result.stdout[-2000:]
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    ours = [
        f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']}" for d in errors if not _foreign(d)
    ]
    assert ours == [], "\n".join(ours)
    assert errors, "the foreign errors are listed because pyright reports them: drop FOREIGN when it does not"


@pytest.mark.slow
def test_pyright_reads_tnp_through_the_stubs(tmp_path: Path) -> None:
    """``typed_xmap.numpy`` is the stub (typed returns with operators), not the runtime package. To pyright a
    NamedArray is one class, ``NamedArray_``, whatever its dtype and spec (what lets ``isinstance`` take
    ``tx.NamedArray``; typed_xmap/_checker_view.py), and it still checks its attributes."""
    (tmp_path / "model.py").write_text(
        "import typed_xmap.numpy as tnp\nfrom typed_xmap import NamedArray, f32\n\n"
        'def f(x: NamedArray[f32, "batch embed"]) -> None:\n'
        '    reveal_type(tnp.zeros({"batch": 2}) + 1.0)\n'
        '    reveal_type(tnp.einsum("{embed},{embed}->", x, x))\n'
        "    x.named_shap\n"
    )
    result = subprocess.run(
        [str(PYRIGHT), "--pythonpath", sys.executable, "model.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    revealed = re.findall(r'Type of ".*?" is "(.*)"', result.stdout)
    assert revealed == ["NamedArray_", "NamedArray_"], result.stdout
    assert 'model.py:7:7 - error: Cannot access attribute "named_shap" for class "NamedArray_"' in result.stdout
