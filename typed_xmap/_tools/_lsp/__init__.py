"""``typed-xmap lsp``: a language server on stdio showing the plugin's diagnostics and named shapes.

Built on pygls (the LSP) and mypy's daemon (incremental checks); the editor set-ups are in
docs/guide/editor.md. Importing this package imports neither jax nor the runtime.
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> int:
    """Serve the editor on stdin/stdout until it shuts the server down."""
    from ._server import server

    server.start_io()
    return 0
