"""The advantage estimators this project knows, listed once. The config schema's choices (brorl.config fills them in),
the config checks, both engines, the analysis and docs/stages.md read this list.

An estimator here is a baseline: what each sample's reward is compared with inside its group. The embedded engine
computes it with the function of brorl.training.embedded.advantages named in `embedded`; the cluster engine passes
`openrlhf` to OpenRLHF 0.11.2 (`--algo.advantage.estimator`). After the baseline, OpenRLHF normalises over the
batch's response tokens only the estimators marked `batch_normalised` (experience_maker.py:325), which both engines
follow unless training.advantage_batch_norm is every_estimator. Standard library only: the config check reads it
without numpy.

To add an estimator: write its baseline as one function of the rewards in brorl.training.embedded.advantages, and
add one row below.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimator:
    """One advantage estimator."""

    name: str  # the config's name (training.advantage_estimator, arms[].advantage_estimator)
    openrlhf: str | None  # OpenRLHF 0.11.2's name; None: the cluster engine cannot train it
    embedded: str | None  # its function in brorl.training.embedded.advantages; None: the embedded engine cannot
    group: bool  # a group baseline: needs N > 1 (OpenRLHF asserts it after parsing its flags)
    batch_normalised: bool  # OpenRLHF normalises it over the batch's response tokens after the baseline
    description: str
    caveat: str = ""  # what a reader of the algorithm table must know about its name (shown in that table's note)


ESTIMATORS: tuple[Estimator, ...] = (
    Estimator(
        "reinforce_baseline", "reinforce_baseline", "group_mean", True, True,
        "REINFORCE++-baseline (ProRLv2, the paper's): reward minus the group mean, then normalised over the batch",
    ),
    Estimator(
        "group_norm", "group_norm", "group_norm", True, False,
        "GRPO: (reward - group mean) / (group std + 1e-9), the std with Bessel's correction",
    ),
    Estimator(
        "rloo", "rloo", "rloo", True, False,
        "RLOO: reward minus the mean of the other N - 1 rewards of its group",
    ),
    Estimator(
        "dr_grpo", "dr_grpo", "group_mean", True, False,
        "Dr. GRPO as OpenRLHF computes it: reward minus the group mean, no std division, no batch normalisation",
        "OpenRLHF 0.11.2's estimator of that name (reward minus the group mean, no std division) trained with this "
        "run's token-mean loss, not Dr. GRPO's constant-normaliser loss",
    ),
    Estimator(
        "reinforce", "reinforce", None, False, True,
        "REINFORCE++: the reward itself, normalised over the batch (no group baseline; OpenRLHF only)",
    ),
)  # fmt: skip

BY_NAME = {e.name: e for e in ESTIMATORS}
NAMES = tuple(BY_NAME)
EMBEDDED = tuple(e.name for e in ESTIMATORS if e.embedded)  # what the embedded engine trains
OPENRLHF_GROUP = tuple(e.openrlhf for e in ESTIMATORS if e.openrlhf and e.group)  # OpenRLHF asserts N > 1 for these
# experience_maker.py:325 normalises these over the batch (and gae, which needs a critic: not an estimator here)
OPENRLHF_BATCH_NORMALISED = tuple(e.openrlhf for e in ESTIMATORS if e.openrlhf and e.batch_normalised)


def engine_problem(name: str, engine: str, key: str, arm: str | None = None) -> str | None:
    """Why `engine` ("embedded" or "cluster") cannot train estimator `name`, set at config `key` (of `arm`), or
    None."""
    where = f"config key '{key}'" + (f" (arm {arm!r})" if arm else "")
    estimator = BY_NAME.get(name)
    if estimator is None:
        return f"{where}: {name!r} is not an advantage estimator (known: {', '.join(NAMES)})"
    if engine == "embedded" and not estimator.embedded:
        return (
            f"{where}: {name!r} is not implemented by the embedded engine (it trains {', '.join(EMBEDDED)}); use "
            "training.engine: cluster (OpenRLHF) for it"
        )
    if engine == "cluster" and not estimator.openrlhf:
        return (
            f"{where}: {name!r} has no OpenRLHF name, so the cluster engine (OpenRLHF) cannot train it; use "
            "training.engine: embedded, or give the estimator its OpenRLHF name in brorl.training.estimators"
        )
    return None


def markdown_table() -> str:
    """The estimators as the table docs/stages.md shows."""
    head = "| estimator | OpenRLHF | embedded engine | group (N > 1) | normalised over the batch | what it is |\n"
    rows = [
        f"| `{e.name}` | {f'`{e.openrlhf}`' if e.openrlhf else 'no'} | "
        f"{f'`{e.embedded}`' if e.embedded else 'no'} | {'yes' if e.group else 'no'} | "
        f"{'yes' if e.batch_normalised else 'no'} | {e.description} |\n"
        for e in ESTIMATORS
    ]
    return head + "|---|---|---|---|---|---|\n" + "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
