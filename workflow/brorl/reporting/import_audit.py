"""An independent record of what a job really ran, for the rerun test's oracle: with BRORL_IMPORT_AUDIT=<folder>, every
process that imports the package appends to <folder>/<pid>.jsonl each package module it imports and each file it
opens under workflow/ (package data, launched code, registry, schemas), tagged with the command of the job it belongs
to (``brorl.evaluation score``: inherited by its child processes). The test compares them with the statically derived
closure of the same command (brorl.reporting.source_closure). Nothing is recorded when the variable is unset.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

FOLDER_ENV = "BRORL_IMPORT_AUDIT"
JOB_ENV = "BRORL_IMPORT_AUDIT_JOB"  # the job's command, inherited by the processes it starts
WORKFLOW = Path(__file__).resolve().parents[2]


def command_of(argv: list[str]) -> str:
    """``python -m brorl.evaluation score --x 1`` -> "brorl.evaluation score" (entry and subcommand), else ""."""
    if "-m" not in argv:
        return ""
    rest = argv[argv.index("-m") + 1 :]
    words = rest[:2] if len(rest) > 1 and not rest[1].startswith("-") else rest[:1]
    return " ".join(words) if words and words[0].startswith("brorl") else ""


def install(folder: str) -> None:
    """Record this process's package imports and workflow file opens from now on."""
    job = os.environ.get(JOB_ENV) or command_of(list(getattr(sys, "orig_argv", sys.argv)))
    if not job:
        return  # the pytest process or a helper: not a job of the workflow
    os.environ[JOB_ENV] = job
    root, seen, busy = str(WORKFLOW) + os.sep, set(), [False]

    def write(entry: dict) -> None:
        busy[0] = True  # the write's own open raises an event too
        try:
            fd = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, (json.dumps({"job": job, **entry}) + "\n").encode())
            os.close(fd)
        finally:
            busy[0] = False

    def hook(event: str, args: tuple) -> None:
        if busy[0] or event not in ("import", "open"):
            return
        if event == "import":
            key = ("module", args[0])
        elif isinstance(args[0], str) and os.path.abspath(args[0]).startswith(root):
            path = os.path.abspath(args[0])
            if path.endswith((".py", ".pyc")) or "__pycache__" in path:
                return
            key = ("file", os.path.relpath(path, WORKFLOW))
        else:
            return
        if (key[0] == "file" or key[1].startswith("brorl")) and key not in seen:
            seen.add(key)
            write({key[0]: key[1]})

    os.makedirs(folder, exist_ok=True)
    sys.addaudithook(hook)
