"""The code record: which files (under workflow/) a ``python -m brorl...`` command runs or reads, each with a digest
that comments, docstrings and formatting leave unchanged. A training segment writes its record into its manifest;
the workflow's rerun triggers (brorl.ops.reruns.rerun_policy) and stale-code notes are built from the same records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache

from .source_cache import cached_closure
from .source_closure import WORKFLOW, command_closure, module_index
from .source_digest import combined_digest, file_digest

# Package modules whose edits rerun nothing: none of them changes a number, a table or a figure.
EXEMPT_MODULES = {
    "brorl.reporting.source_closure": "derives the rerun triggers themselves",
    "brorl.reporting.source_digest": "derives the rerun triggers themselves",
    "brorl.reporting.code_record": "derives the rerun triggers themselves",
    "brorl.reporting.source_facts": "derives the rerun triggers themselves",
    "brorl.reporting.source_paths": "derives the rerun triggers themselves",
    "brorl.reporting.source_cache": "derives the rerun triggers themselves",
    "brorl.reporting.import_audit": "the rerun test's record of what a job ran: loaded only when BRORL_IMPORT_AUDIT is set",
    "brorl.reporting.provenance": "writes what produced an output beside it (versions, hashes, machine)",
    "brorl.hub.retry": "retries hub downloads with backoff: what is downloaded is pinned and checksummed",
    "brorl.hub.pins": "checks that hub revisions are pinned before a download: what is downloaded is recorded by "
    "commit and checksum",
    "brorl.cli": "runs a command's chosen subcommand and words its expected errors",
}


@cache
def _sources(commands: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, str], ...]:
    # kept across parses while no file under workflow/ changes (EXEMPT_MODULES lives in this file, under it too)
    found = cached_closure(WORKFLOW, json.dumps(commands), lambda: _derive_sources(commands))
    return tuple(tuple(pair) for pair in found)


def _derive_sources(commands: tuple[tuple[str, str | None], ...]) -> list[tuple[str, str]]:
    closure = command_closure(commands)
    index = module_index()
    exempt = {index[m].resolve() for m in EXEMPT_MODULES}
    return sorted((path.relative_to(WORKFLOW).as_posix(), file_digest(path)) for path in closure.files - exempt)


def code_sources(commands: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """Path (under workflow/) -> digest of every file the commands run or read, exempt modules aside."""
    return dict(_sources(tuple(sorted(set(commands), key=str))))


def training_code() -> dict[str, str]:
    """The code a training segment runs now (`python -m brorl.training segment`): recorded in each segment's
    manifest, compared with the current one to name arms trained by older code."""
    return code_sources([("brorl.training", "segment")])


def changed_code(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The paths whose digest differs between two records (added and removed files included), sorted."""
    return sorted(p for p in set(recorded) | set(current) if recorded.get(p) != current.get(p))


def code_digest(sources: Mapping[str, str]) -> str:
    """One digest of a code record (shown where a list of files would be too long)."""
    return combined_digest(dict(sources))
