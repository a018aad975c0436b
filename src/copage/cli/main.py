"""The ``copage`` command: one subcommand module per command group."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from copage.cli import conversations, dense, simulate

# name -> (module with add_parser/run)
COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
                          Callable[[argparse.Namespace], int]]] = {
    "simulate": (simulate.add_parser, simulate.run),
    "conversations": (conversations.add_parser, conversations.run),
    "dense": (dense.add_parser, dense.run),
}


#: The extra a command's optional dependencies come from (``pip install 'copage[EXTRA]'``).
EXTRAS = {"serve": "server", "mcp": "mcp", "bench": "bench", "nll": "llm"}


def _optional_commands() -> None:
    for name in ("bench", "serve", "nll", "mcp"):
        try:
            mod = __import__(f"copage.cli.{name}", fromlist=["add_parser", "run"])
        except ModuleNotFoundError as e:
            if (e.name or "").startswith("copage"):
                raise  # a bug in copage itself, not a missing optional dependency
            continue
        COMMANDS[name] = (mod.add_parser, mod.run)


def build_parser() -> argparse.ArgumentParser:
    _optional_commands()
    parser = argparse.ArgumentParser(
        prog="copage", description="Cooperative memory paging with keyword bookmarks."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 on bad input, with a one-line error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return COMMANDS[args.command][1](args)
    except ModuleNotFoundError as e:
        if (e.name or "").startswith("copage"):
            raise  # a bug in copage itself, not a missing optional dependency
        extra = EXTRAS.get(args.command, "all")
        print(f"copage {args.command}: error: needs the {e.name!r} package, from the "
              f"{extra!r} extra: pip install 'copage[{extra}]'", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:  # includes UnknownNameError and DatasetError
        print(f"copage {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
