"""What every ``python -m brorl.<stage>`` command shares: run the chosen subcommand, report expected errors, read
``@file`` arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run_command(args: argparse.Namespace, errors: tuple[type[Exception], ...], status: int = 2) -> None:
    """Call ``args.func(args)``; an expected error ends with one ``error: ...`` line on stderr and exit ``status``."""
    try:
        args.func(args)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(status)


def text_or_file(value: str) -> str:
    """A text argument as given, or the text of the file it names as ``@path`` (for JSON too long for a shell)."""
    return Path(value[1:]).read_text() if value.startswith("@") else value
