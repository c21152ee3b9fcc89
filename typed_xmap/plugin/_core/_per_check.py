"""State that lasts one check of one module: a hook's memo of what it noted or read there.

A module-level dict outlives the check that filled it: the language server's daemon checks an edited module again
in the same process (its tree object is kept, the new parse merged into it), so a memo keyed by the module, its
tree or an ``id()`` would read the last check's lines and columns. mypy makes a new checker (the hooks' ``api``)
for each check of a module and keeps it through the deferred passes of that check: the state is held with it
and started anew when another checker asks. The checker is held itself, not weakly (mypyc's compiled
``TypeChecker`` takes no weak reference on some builds: mypy 2.4.1 for Python 3.12), one per module, replaced by
the module's next check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["PerCheck"]

T = TypeVar("T")


class PerCheck(Generic[T]):
    """One value per module, made by ``new`` for each check of it (``of``)."""

    def __init__(self, new: Callable[[], T]) -> None:
        self._new = new
        self._held: dict[str, tuple[Any, T]] = {}

    def of(self, api: Any) -> T:
        """The value of the check ``api`` is making (of the module ``api.tree``): a new one for a new check."""
        held = self._held.get(_module(api))
        if held is None or held[0] is not api:
            return self.set(api, self._new())
        return held[1]

    def set(self, api: Any, value: T) -> T:
        """Hold ``value`` as the value of the check ``api`` is making."""
        self._held[_module(api)] = (api, value)
        return value


def _module(api: Any) -> str:
    return str(getattr(getattr(api, "tree", None), "fullname", ""))
