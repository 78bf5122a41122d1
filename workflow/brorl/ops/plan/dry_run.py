"""`make dry-run`'s ending: Snakemake's dry run of the paper prints some 30,000 lines, with its actionable warnings
(unpinned hub sources, no smoke verdict) among the first ten. Its output passes through unchanged, then one line per
rule (jobs and the sbatch resources they ask for) and the warnings again. Pure, except `main` (stdin to stdout).

    snakemake --profile slurm -n ... 2>&1 | python -m brorl.ops.plan.dry_run
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable

# the requests sbatch gets, in this order (the rest of Snakemake's resources are its own bookkeeping)
SBATCH_KEYS = ("slurm_partition", "nodes", "tasks", "gres", "gpu", "cpus_per_task", "cpus_per_gpu", "mem_mb", "runtime")
JOB = re.compile(r"^ *(?:local)?rule (\w+):$")  # indented: a member of a group job
GROUP = re.compile(r"^\[[^]]*\] Group job (\w+) ")


def rule_resources(lines: Iterable[str]) -> dict[str, Counter]:
    """rule -> Counter of its jobs' sbatch requests (each a "k=v, ..." string), in the order the rules appear."""
    out: dict[str, Counter] = {}
    rule = None
    for line in lines:
        match = JOB.match(line)
        if match:
            rule = match[1]
            out.setdefault(rule, Counter())
        elif rule and line.lstrip().startswith("resources: "):
            pairs = dict(kv.split("=", 1) for kv in line.lstrip().removeprefix("resources: ").split(", ") if "=" in kv)
            out[rule][", ".join(f"{k}={pairs[k]}" for k in SBATCH_KEYS if k in pairs) or "(none)"] += 1
            rule = None
    return out


def warnings(lines: Iterable[str]) -> list[str]:
    """The `warning:` lines of the output and the `  - ` lines that continue them."""
    out, inside = [], False
    for line in lines:
        if line.startswith("warning:"):
            out.append(line)
            inside = True
        elif inside and line.startswith("  - "):
            out.append(line)
        else:
            inside = False
    return out


def summary(lines: list[str]) -> list[str]:
    """The lines printed after the dry run's own output."""
    per_rule = rule_resources(lines)
    out = ["", "per rule: jobs, and the sbatch resources they ask for"]
    for rule, sizes in per_rule.items():
        jobs = sum(sizes.values())
        requests = "; ".join(f"{request}" + (f" ({n} jobs)" if len(sizes) > 1 else "") for request, n in sizes.items())
        out.append(f"  {rule}: {jobs} job(s): {requests}")
    groups = Counter(m[1] for m in map(GROUP.match, lines) if m)
    for group, n in groups.items():  # their members' requests merge: runtimes add up (brorl.ops.run.submission)
        out.append(f"  group {group}: {n} group job(s), one sbatch each for the member jobs above")
    found = warnings(lines)
    if found:
        out += ["", "warnings (repeated from the top of the output):", *found]
    return out


def main() -> int:
    lines = []
    for line in sys.stdin:
        sys.stdout.write(line)
        lines.append(line.rstrip("\n"))
    print("\n".join(summary(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
