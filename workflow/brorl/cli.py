"""What every ``python -m brorl.<stage>`` command shares: run the chosen subcommand, report expected errors, read
``@file`` arguments."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def run_command(
    args: argparse.Namespace, errors: tuple[type[Exception], ...], status: int = 2, hard_exit: bool = False
) -> None:
    """Call ``args.func(args)``; an expected error ends with one ``error: ...`` line on stderr and exit ``status``.
    ``hard_exit``: leave without interpreter teardown (for stateless commands that read parquet, see below)."""
    try:
        args.func(args)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        if not hard_exit:
            sys.exit(status)
        sys.stdout.flush()
        sys.stderr.flush()
        # leave without interpreter teardown: Arrow's parquet thread pool, torn down at exit while a worker is alive,
        # sometimes aborts the process (SIGABRT, "terminate called without an active exception": apache/arrow#34314),
        # which would replace this exit status; nothing is left to clean up on this path
        os._exit(status)


def text_or_file(value: str) -> str:
    """A text argument as given, or the text of the file it names as ``@path`` (for JSON too long for a shell)."""
    return Path(value[1:]).read_text() if value.startswith("@") else value
