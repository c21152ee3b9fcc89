"""Plugin options, from ``[typed_xmap]`` (mypy.ini / setup.cfg) or ``[tool.typed_xmap]`` (pyproject.toml).

``body_checks`` (default true): check values inside xmapped bodies for axis-resource conflicts.
``call_notes`` (default true): add a note in the user's notation to mypy's ``arg-type`` errors.
``annotated_calls`` (default true): bind axis sizes across calls of NamedArray-annotated functions.
"""

from __future__ import annotations

import configparser
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

__all__ = ["PluginConfig", "load_config"]

SECTION = "typed_xmap"


@dataclass(frozen=True)
class PluginConfig:
    body_checks: bool = True
    call_notes: bool = True
    annotated_calls: bool = True

    def as_data(self) -> dict[str, Any]:
        return asdict(self)


def _boolean(option: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"[{SECTION}] {option} = {value!r}: expected true or false")


def load_config(config_file: str | None) -> PluginConfig:
    """Options from the mypy config file mypy itself read (``options.config_file``)."""
    values: dict[str, object] = {}
    if config_file:
        path = Path(config_file)
        if path.suffix == ".toml":
            import tomllib

            with path.open("rb") as handle:
                values = dict(tomllib.load(handle).get("tool", {}).get(SECTION, {}))
        elif path.exists():
            parser = configparser.ConfigParser()
            parser.read(path)
            if parser.has_section(SECTION):
                values = dict(parser.items(SECTION))
    known = {f.name for f in fields(PluginConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"[{SECTION}] unknown option {unknown[0]!r}; the options are {', '.join(sorted(known))}")
    return PluginConfig(**{k: _boolean(k, v) for k, v in values.items()})
