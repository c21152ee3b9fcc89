"""The ``typed-xmap`` command: ``demo`` (the main job), ``check`` (mypy with the plugin), ``bench``, ``lsp``,
``inspect`` (``dmypy inspect`` in the annotation notation)."""

from __future__ import annotations

import argparse
import os
import sys


def _emulate_devices(count: int = 8) -> None:
    """Ask XLA for ``count`` CPU devices (unless the user chose a count); must run before jax is imported.

    The default backend stays what it is (an accelerator when there is one); the emulated CPU devices are
    for the sections about sharding over more devices than the machine has (``tx.fitting_mesh(emulate=True)``).
    """
    if "jax" in sys.modules:
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()


def _version() -> str:
    from .. import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="typed-xmap", description=(__doc__ or "").replace("``", ""))
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="show named arrays, runtime checks and xmap on the devices at hand")
    check = commands.add_parser(
        "check", help="type-check PATHS with mypy and the typed_xmap plugin (extra arguments go to mypy)"
    )
    check.add_argument("paths", nargs="+")
    check.add_argument(
        "--unknowns",
        action="store_true",
        help="list where a NamedArray's named shape became unknown, and why; end with how many are known",
    )
    check.add_argument(
        "--comm",
        action="store_true",
        help="list, per function, where placement forces a collective (line, kind, mesh axes, cause)",
    )
    bench = commands.add_parser("bench", help="run the benchmarks in bench/ (ratios against hand-written JAX)")
    bench.add_argument("names", nargs="*", help="benchmark names (default: all)")
    commands.add_parser("lsp", help="a language server on stdio: the plugin's diagnostics, named shapes on hover")
    inspect = commands.add_parser(
        "inspect",
        help="dmypy inspect LOCATION (PATH:LINE:COLUMN[:END_LINE:END_COLUMN]) of a running mypy daemon, NamedArray "
        "types in the annotation notation (other arguments go to dmypy inspect)",
    )
    inspect.add_argument("location")
    inspect.add_argument("--status-file", default=".dmypy.json", help="the daemon's status file (dmypy's default)")
    args, rest = parser.parse_known_args(argv)
    if args.command == "check":
        from ._check import COMM_FLAGS, run_check

        extra = [*COMM_FLAGS, *rest] if args.comm else rest
        return run_check(
            args.paths, extra, fast_exit=argv is None, unknowns=args.unknowns
        )  # the command itself: exit as mypy does
    if args.command == "inspect":
        from ._inspect import run_inspect

        return run_inspect(args.status_file, args.location, rest)
    if args.command == "lsp":
        from ._lsp import main as serve

        return serve()
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    _emulate_devices()
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo()
    if args.command == "bench":
        from ._bench import run_benchmarks

        return run_benchmarks(args.names)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
