"""The pytest plugin (entry point ``pytest11``): ``--typed-xmap-packages=mypkg,other`` checks those packages.

It installs ``tx.install_import_hook`` for the named packages before the test run imports them, so every
NamedArray-annotated function there is checked as if decorated with ``@tx.typed``. Without the option the
plugin does nothing (and imports nothing of jax).
"""

from __future__ import annotations

from typing import Any

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure"]

_HOOK_KEY = "_typed_xmap_import_hook"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("typed_xmap")
    group.addoption(
        "--typed-xmap-packages",
        action="store",
        default=None,
        help="comma-separated packages whose NamedArray-annotated functions are checked at run time "
        "(as with @tx.typed) during the test run",
    )


def pytest_configure(config: Any) -> None:
    value = config.getoption("typed_xmap_packages", None)
    if not value:
        return
    from ._import_hook import install_import_hook

    packages = [p.strip() for p in value.split(",") if p.strip()]
    setattr(config, _HOOK_KEY, install_import_hook(packages))


def pytest_unconfigure(config: Any) -> None:
    hook = getattr(config, _HOOK_KEY, None)
    if hook is not None:
        hook.uninstall()
