"""What every ``python -m brorl.<stage>`` command shares: run the chosen subcommand, report expected errors."""

from __future__ import annotations

import argparse
import sys


def run_command(args: argparse.Namespace, errors: tuple[type[Exception], ...], status: int = 2) -> None:
    """Call ``args.func(args)``; an expected error ends with one ``error: ...`` line on stderr and exit ``status``."""
    try:
        args.func(args)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(status)
