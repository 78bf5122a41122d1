"""The rerun test's oracle: what jobs of a real run imported and opened (brorl.reporting.import_audit, switched on by
BRORL_IMPORT_AUDIT) against the closure the rerun derivation computes for the same command without running it
(brorl.reporting.source_closure). A module or package file a job used outside its command's closure is code whose
edit would not rerun the rule: a stale result."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from brorl.reporting.code_record import EXEMPT_MODULES
from brorl.reporting.import_audit import FOLDER_ENV
from brorl.reporting.source_closure import WORKFLOW, command_closure
from brorl.reporting.source_paths import CODE_ROOTS

__all__ = ["FOLDER_ENV", "audited", "outside_closure"]


def audited(folder: Path) -> dict[str, dict[str, set[str]]]:
    """command ("brorl.evaluation score") -> {"module": names imported, "file": workflow files opened}."""
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"module": set(), "file": set()})
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            kind = "module" if "module" in entry else "file"
            found[entry["job"]][kind].add(entry[kind])
    return dict(found)


def outside_closure(folder: Path, workflow: Path = WORKFLOW) -> dict[str, list[str]]:
    """command -> the package modules and code or data files its jobs used that its derived closure lacks, the closure
    derived from ``workflow`` (the folder of the package the jobs ran: a test's copy of the checkout)."""
    code = tuple(root.removeprefix("workflow/") + "/" for root in CODE_ROOTS)
    missing = {}
    for job, used in audited(folder).items():
        entry, _, subcommand = job.partition(" ")
        closure = command_closure([(entry, subcommand or None)], workflow.resolve())
        files = {
            (
                p.relative_to(workflow.resolve()) if p.is_relative_to(workflow.resolve()) else p.relative_to(WORKFLOW)
            ).as_posix()
            for p in closure.files
        }
        extra = sorted(
            [m for m in used["module"] - closure.modules - set(EXEMPT_MODULES)]
            + [f for f in used["file"] - files if f.startswith(code)]
        )
        if extra:
            missing[job] = extra
    return missing
