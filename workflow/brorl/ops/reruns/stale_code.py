"""Outputs made by code that has changed since: no code edit reruns the exempt rules (brorl.ops.reruns.rerun_policy:
EXEMPT_RULES), so what they ran is recorded and compared with what they would run now. A training segment's
manifest records its code (path -> digest): arms trained by older code. Every other exempt job's command starts with
a shell comment naming the digest of its code (``# code <digest>``), which Snakemake keeps in its metadata for each
output, and the code behind each digest is kept in .snakemake/brorl/code/<digest>.json. The dry run, `make status`
and SUMMARY.md show both (docs/cluster.md#rerun-policy)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...reporting.code_record import changed_code
from .rerun_policy import code_comment

__all__ = ["code_comment"]

NOT_RECORDED = None  # an arm whose manifests predate code records (or cannot be read)


def recorded_code(train_dir: Path, arm: str) -> list[dict | None]:
    """The code record of each finished segment of an arm (None where a manifest has none or cannot be read)."""
    records = []
    for path in sorted((train_dir / arm).glob("segment*.json")):
        try:
            code = json.loads(path.read_text()).get("code")
        except (OSError, ValueError, AttributeError):
            code = None
        records.append(code if isinstance(code, dict) else None)
    return records


def stale_training(train_dir: Path, arms: Iterable[str], current: Mapping[str, str]) -> dict[str, list[str] | None]:
    """Arm -> the files changed since any of its segments trained (None: not recorded); arms trained by the current
    code, and arms with no finished segment, are left out."""
    stale: dict[str, list[str] | None] = {}
    for arm in arms:
        records = recorded_code(train_dir, arm)
        if any(r is None for r in records):
            stale[arm] = NOT_RECORDED
            continue
        changed = sorted({path for r in records for path in changed_code(r, current)})
        if changed:
            stale[arm] = changed
    return stale


def stale_lines(stale: Mapping[str, list[str] | None], shown: int = 6) -> list[str]:
    """One line per arm of ``stale_training``, naming the changed files (the first ``shown``)."""
    lines = []
    for arm, changed in sorted(stale.items()):
        if changed is None:
            lines.append(f"arm {arm}: the code it was trained with is not recorded (trained before code records)")
            continue
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        lines.append(
            f"arm {arm} was trained by code that has changed since: {', '.join(changed[:shown])}{more}; a code edit "
            f"never reruns training (delete results/train/{arm} to retrain it with the current code)"
        )
    return lines


# ------------------------------------------------------------------------------ the other exempt rules' outputs
RECORDS = Path(".snakemake") / "brorl" / "code"  # <digest>.json: the code behind a digest (relative to the workdir)
MARK = re.compile(r"^# code ([0-9a-f]{12})\b", flags=re.M)


def keep_record(workdir: Path, digest: str, code: Mapping[str, str]) -> None:
    """Write the code behind ``digest`` once."""
    path = workdir / RECORDS / f"{digest}.json"
    if not path.is_file():
        keep_json(path, dict(code))


def keep_json(path: Path, data: Mapping) -> None:
    """Write JSON atomically; a failure to write only loses a later note."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, sort_keys=True))
        temporary.replace(path)
    except OSError:
        pass


def keep_commands(workdir: Path, commands: Mapping[str, list]) -> None:
    """The exempt rules' commands (rule -> [(entry, subcommand)]), for `make status`, which reads no Snakefile."""
    keep_json(workdir / RECORDS / "commands.json", {rule: [list(c) for c in cmds] for rule, cmds in commands.items()})


def kept_commands(workdir: Path) -> dict[str, list]:
    """What keep_commands wrote ({} before any run)."""
    try:
        return json.loads((workdir / RECORDS / "commands.json").read_text())
    except (OSError, ValueError):
        return {}


def _recorded_digests(workdir: Path, rules: set[str]) -> dict[str, Counter]:
    """Rule -> Counter of the code digests its outputs were made with (None: made before code comments), from
    Snakemake's metadata (one record per output)."""
    found: dict[str, Counter] = defaultdict(Counter)
    for folder, _, files in os.walk(workdir / ".snakemake" / "metadata"):
        for name in files:
            try:
                record = json.loads(Path(folder, name).read_text())
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and record.get("rule") in rules:
                mark = MARK.search(record.get("shellcmd") or "")
                found[record["rule"]][mark[1] if mark else None] += 1
    return found


def stale_outputs(workdir: Path, current: Mapping[str, tuple[str, Mapping[str, str]]]) -> dict[str, dict]:
    """Rule -> {"outputs": how many were made by other code, "changed": the files changed since (None: not
    recorded)}, for exempt rules (``current``: rule -> (digest, code) now); rules up to date are left out."""
    stale = {}
    for rule, counts in _recorded_digests(workdir, set(current)).items():
        digest, code = current[rule]
        old = {d: n for d, n in counts.items() if d != digest}
        if not old:
            continue
        changed: set[str] | None = set()
        for d in old:
            path = workdir / RECORDS / f"{d}.json"
            if d is None or not path.is_file():
                changed = None
                break
            changed |= set(changed_code(json.loads(path.read_text()), code))
        stale[rule] = {"outputs": sum(old.values()), "changed": None if changed is None else sorted(changed)}
    return stale


def stale_output_lines(stale: Mapping[str, dict], shown: int = 6) -> list[str]:
    """A line per rule of ``stale_outputs`` whose code changed, and one for the outputs made before code records."""
    lines, unknown = [], []
    for rule, entry in sorted(stale.items()):
        if entry["changed"] is None:
            unknown.append(f"{rule} {entry['outputs']}")
            continue
        changed = entry["changed"]
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        lines.append(
            f"{entry['outputs']} output(s) of {rule} were made by code that has changed since: "
            f"{', '.join(changed[:shown])}{more}; a code edit never reruns {rule} (add --forcerun {rule} to remake "
            "them with the current code)"
        )
    if unknown:
        lines.append(f"outputs made before code records (the code that made them is not known): {', '.join(unknown)}")
    return lines
