"""mypy's report (``file:line:col:end_line:end_col: error: message  [code]``) as LSP diagnostics per file."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from ._report import MESSAGE

UNKNOWN_NOTE = "named shape unknown: "
"""How the plugin's ``named-shape-unknown`` notes begin (mypy prints no code on a note): information of their
own, shown when a mypy config enables the code (``enable_error_code = ["named-shape-unknown"]``)."""
COMM_NOTE = "collective: "
"""How the plugin's ``named-comm`` notes begin (``typed-xmap check --comm``'s): where placement forces a
collective, shown on its line as information of its own (the server turns the code on for the open files)."""
SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "note": lsp.DiagnosticSeverity.Information,
}


def diagnostics(report: str, root: Path) -> dict[Path, list[lsp.Diagnostic]]:
    """The report's messages by absolute file; a note right after an error joins that error's message."""
    found: dict[Path, list[lsp.Diagnostic]] = {}
    for row in report.splitlines():
        match = MESSAGE.match(row)
        if match is None:
            continue
        path = (root / match["file"]).resolve()
        listed = found.setdefault(path, [])
        line, col = int(match["line"]) - 1, max(int(match["col"]) - 1, 0)
        end_line = int(match["end_line"] or match["line"]) - 1
        end_col = int(match["end_col"]) if match["end_col"] else col + 1  # mypy's end column is inclusive
        unknown = match["text"].startswith(UNKNOWN_NOTE)  # the plugin's named-shape-unknown notes stand alone
        comm = match["text"].startswith(COMM_NOTE)  # and so do its named-comm notes
        alone = unknown or comm
        if match["severity"] == "note" and not alone and listed and listed[-1].range.start.line == line:
            listed[-1].message += "\n" + match["text"]
            continue
        listed.append(
            lsp.Diagnostic(
                range=lsp.Range(lsp.Position(line, col), lsp.Position(end_line, end_col)),
                message=match["text"],
                severity=SEVERITY[match["severity"]],
                code=match["code"] or ("named-shape-unknown" if unknown else "named-comm" if comm else None),
                source="typed-xmap (mypy)",
            )
        )
    return found
