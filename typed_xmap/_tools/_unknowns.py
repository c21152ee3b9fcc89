"""``typed-xmap check --unknowns``: where named shapes became unknown, and how many are known.

The plugin notes each expression where a NamedArray's named shape becomes unknown, with its cause (code
``named-shape-unknown``, off by default: this turns it on). The count walks the checked sources' expressions
and the types mypy inferred for them: every expression whose type is a NamedArray counts, a known named shape
or not. The sources are checked afresh (their cached results hold no expression types); the modules they
import keep mypy's cache, in a cache directory of its own (so switching to and from ``--unknowns`` does not
invalidate the ordinary one).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..plugin._core._codes import NAMED_SHAPE_UNKNOWN
from ..plugin._core._encoding import decode
from ..plugin._core._tree import expressions

if TYPE_CHECKING:
    from mypy.build import BuildResult, BuildSource
    from mypy.options import Options

__all__ = ["UNKNOWNS_FLAGS", "forget", "fresh_sources", "known_line", "summary"]

UNKNOWNS_FLAGS = ["--enable-error-code", NAMED_SHAPE_UNKNOWN.code]
"""mypy flags that turn the plugin's notes on."""


def fresh_sources(options: Options, sources: Iterable[BuildSource]) -> list[str]:
    """Have ``sources`` checked afresh in this run (cache entries of their own, which ``forget`` removes after
    it), the modules they import with a cache directory of ``--unknowns``' own; the sources' paths."""
    from mypy.build import normpath

    options.cache_dir = os.path.join(options.cache_dir, "typed-xmap-unknowns")
    # a cache of its own, which the language server never reads: no fine-grained dependencies (mypy cannot write
    # them for the sources whose cache entries this run removes)
    options.cache_fine_grained = False
    options.export_types = True
    options.preserve_asts = True
    paths = []
    for source in sources:
        if source.path is not None:
            stem = os.path.join(options.cache_dir, "sources", source.module.replace(".", "/"))
            paths.append(normpath(source.path, options))
            options.cache_map[paths[-1]] = (f"{stem}.meta.ff", f"{stem}.data.ff")
    return paths


def forget(result: BuildResult, paths: Iterable[str]) -> None:
    """Remove the sources' cache entries: the next ``--unknowns`` run checks them afresh too."""
    from mypy.build import get_cache_names

    store, options = result.manager.metastore, result.manager.options
    for path in paths:
        for name in get_cache_names("", path, options)[:2]:
            with contextlib.suppress(Exception):  # never written (a failed build): nothing to remove
                store.remove(name)
    store.commit()


def summary(result: BuildResult, sources: Iterable[BuildSource]) -> tuple[int, int]:
    """(known, total): the NamedArray expressions of ``sources`` and how many have a known named shape."""
    known = total = 0
    for source in sources:
        tree = result.files.get(source.module)
        if tree is None:
            continue
        for expr in expressions(tree.defs):
            typ = result.types.get(expr)
            shape = decode(typ) if typ is not None else None
            if shape is not None and not shape.scalar:
                total += 1
                known += shape.named is not None
    return known, total


def known_line(known: int, total: int) -> str:
    """The closing line: ``named shapes known: K of N NamedArray expressions (P%)``."""
    percent = 100.0 * known / total if total else 100.0
    return f"named shapes known: {known} of {total} NamedArray expressions ({percent:.1f}%)"
