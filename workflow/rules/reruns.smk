# Rerun triggers derived from the code each rule's command runs (brorl.ops.reruns.rerun_policy,
# docs/cluster.md#rerun-policy): included after every stage's rules, it gives each rule one param per file its
# `python -m brorl...` commands run or read ("<path> <digest>") and one of its command ("shell <digest>"), so that an
# edit reruns exactly the rules running the edited code, and the dry run's reason names the file. A rule whose code
# cannot be derived stops the workflow here, before any job, naming it.
from snakemake.exceptions import WorkflowError

from brorl.ops.reruns.rerun_policy import (
    RerunPolicyError,
    add_triggers,
    save_cache,
)
from brorl.reporting.code_record import training_code
from brorl.ops.reruns.stale_code import (
    keep_commands,
    keep_record,
    stale_lines,
    stale_output_lines,
    stale_outputs,
    stale_training,
)

try:
    EXEMPT_CODE = add_triggers(list(workflow.rules))
except RerunPolicyError as err:
    raise WorkflowError(str(err)) from None
save_cache()  # what the derivation read, kept for the next parse (every job parses the Snakefile again)

# The exempt rules (training, what it starts from, GPU preflights and generation) get no trigger: a code edit never
# reruns them. What they ran is recorded instead (a training segment's manifest; the first line of every other exempt
# command, kept in Snakemake's metadata) and outputs made by code that has changed since are named here, by `make
# status` and in SUMMARY.md (write_summary's param).
# (computed in jobs too: a job that parses the Snakefile formats write_summary's command itself). Not reported per
# output: training (reported per arm) and the decision experiment's registration (a record, not a result).
STALE_UNREPORTED = {"train_ppo", "register_decision"}
if workflow.is_main_process:
    for _digest, _code, _ in EXEMPT_CODE.values():
        keep_record(Path.cwd(), _digest, _code)
    keep_commands(Path.cwd(), {name: c[2] for name, c in EXEMPT_CODE.items()})
STALE_CODE = {
    "arms": stale_training(Path("results/train"), TRAINED_ARMS, training_code()),
    "outputs": stale_outputs(
        Path.cwd(),
        {
            name: c[:2]
            for name, c in EXEMPT_CODE.items()
            if name not in STALE_UNREPORTED
        },
    ),
}
if workflow.is_main_process:
    for _note in stale_lines(STALE_CODE["arms"]) + stale_output_lines(
        STALE_CODE["outputs"]
    ):
        print(f"note: {_note}", file=sys.stderr)
