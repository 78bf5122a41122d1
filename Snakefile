# BroRL reproduction (Hu et al., arXiv 2510.01180): the table of contents of the workflow.
# Stages live in workflow/rules/<stage>.smk, their input functions in workflow/rules/helpers/<stage>.smk, their logic
# in the `brorl` package (workflow/brorl/).
# Path grammar (outputs; logs and timings mirror them under results/logs/ and results/timings/):
#   results/simulation/N{n}_seed{seed}.parquet                      one token-level run (Figure 3)
#   results/simulation/sensitivity/{variant}/N{n}_seed{seed}.parquet  optimizer-sensitivity run
#   results/simulation/theory_checks.json                           Theorem 1 / Lemma 2 / Corollary 3 checks
#   results/eval/{arm}/step{step}/{benchmark}.{samples,scores}.parquet, .summary.json  evaluation (arm base = start)
#   results/probe/{arm}/step{step}.{samples,scores}.parquet, pass_rates.csv  the mass-balance probe (probe.enabled)
#   results/throughput/p{prompts}_n{n}_pc{on|off}.json, machine.json  generation throughput (Table 2)
#   results/figures/<name>.{png,pdf}, results/tables/<name>.{md,csv} the paper's figures and tables
import os
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The package is importable here (input functions) and in every shell job (`python -m brorl...`), installed or not.
PACKAGE_DIR = str(Path(workflow.basedir) / "workflow")
if PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)
if PACKAGE_DIR not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ.update(
        PYTHONPATH=os.pathsep.join(
            filter(None, [PACKAGE_DIR, os.environ.get("PYTHONPATH")])
        )
    )

from snakemake.exceptions import WorkflowError

from brorl.config import validate_config
from brorl.ops.run.run_profile import lost_preset
from brorl.hub.pin_lock import apply_lock_file


# The paper's experiment, found beside this file also under --directory; --configfile files merge over it.
configfile: os.path.join(workflow.basedir, "config.yaml")


# Fill schema defaults in place and check every key: a bad config stops here, before any job, naming the key.
validate_config(config)
# A profile that runs a preset (profiles/local: the tiny one) loses it to a --configfile on the command line: refused.
if lost_preset(config, workflow.config_settings.configfiles):
    raise WorkflowError(lost_preset(config, workflow.config_settings.configfiles))
# Branch names resolved to commits by `make pin` (pins.lock.yaml beside this file, when present: brorl.hub.pin_lock).
for _key in apply_lock_file(config, Path(workflow.basedir)):
    print(f"note: {_key} pinned by pins.lock.yaml", file=sys.stderr)


report: "workflow/report/workflow.rst"


# Input functions first (what several stages share, then each stage's own), then the rules.
include: "workflow/rules/common.smk"
include: "workflow/rules/hooks.smk"
include: "workflow/rules/helpers/simulation.smk"
include: "workflow/rules/helpers/data.smk"
include: "workflow/rules/helpers/model.smk"
include: "workflow/rules/helpers/evaluate.smk"
include: "workflow/rules/helpers/throughput.smk"
include: "workflow/rules/helpers/analysis.smk"
include: "workflow/rules/helpers/train.smk"
include: "workflow/rules/helpers/preflight.smk"
include: "workflow/rules/helpers/probe.smk"
include: "workflow/rules/simulation.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/preflight.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/throughput.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/probe.smk"
# last: every rule above gets its rerun trigger from the code its command runs
include: "workflow/rules/reruns.smk"


rule all:
    """Every stage's final outputs (the union of STAGE_TARGETS, workflow/rules/common.smk)."""
    default_target: True
    input:
        get_final_outputs(),
