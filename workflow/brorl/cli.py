"""What every ``python -m brorl.<stage>`` command shares: run the chosen subcommand, report expected errors, read
``@file`` arguments."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


def load_yaml(source: str | bytes | IO) -> Any:
    """Parse YAML safely with libyaml's C loader where PyYAML was built with it (the config, the benchmark registry
    and the paper's numbers are read at every parse), else with the pure-Python one."""
    import yaml

    return yaml.load(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


# a full disk, a quota, a read-only or forbidden folder: one line naming the file instead of a traceback
STORAGE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def writable_problem(out: Path | str) -> str:
    """Why ``out`` cannot be written ("" when it can): checked before a long job's work, so nothing is lost."""
    folder = Path(out).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as err:
        return f"{folder}: cannot write there ({err.strerror}): nothing was done; fix the folder and rerun"
    return ""


def run_command(
    args: argparse.Namespace, errors: tuple[type[Exception], ...], status: int = 2, hard_exit: bool = False
) -> None:
    """Call ``args.func(args)``; an expected error ends with one ``error: ...`` line on stderr and exit ``status``.
    ``hard_exit``: an expected error leaves without interpreter teardown (stateless commands that read parquet, see
    ``leave``)."""
    try:
        args.func(args)
    except OSError as err:
        if err.errno not in STORAGE_ERRORS or isinstance(err, errors):
            raise
        where = err.filename or "an output file (the error did not say which)"
        print(f"error: cannot write {where}: {err.strerror}; free space or fix the folder, then rerun", file=sys.stderr)
        sys.exit(status)
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        if not hard_exit:
            sys.exit(status)
        leave(status)


def run_as_program(main: Callable[[], None]) -> None:
    """Run a command's ``main`` as the process (a ``__main__`` module) and leave without interpreter teardown, whatever
    its exit status (see ``leave``); in-process callers such as tests call ``main`` itself."""
    try:
        main()
    except SystemExit as done:
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        leave(done.code if isinstance(done.code, int) else int(done.code is not None))
    leave(0)


def leave(status: int) -> None:
    """Exit with ``status`` without interpreter teardown. Arrow's parquet thread pool, torn down at exit while a worker
    is alive, sometimes aborts the process (SIGABRT, "terminate called without an active exception": apache/arrow#34314)
    after its work is done, which would replace this exit status; every output is closed by then."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def remake_hint(path: Path | str) -> str:
    """How to recover from an output that cannot be read: "; delete <path>: ..." (every output of the workflow is a
    target, so the plain command remakes it); "" for an engine's working state (run/), which nothing remakes."""
    if "run" in Path(path).parts[:-1]:
        return ""
    return f"; delete {path}: the next run of the workflow remakes it"


def text_or_file(value: str) -> str:
    """A text argument as given, or the text of the file it names as ``@path`` (for JSON too long for a shell)."""
    return Path(value[1:]).read_text() if value.startswith("@") else value
