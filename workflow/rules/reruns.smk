# Rerun triggers derived from the code each rule's command runs (brorl.operations.rerun_policy,
# docs/cluster.md#rerun-policy): included after every stage's rules, it gives each rule one param per file its
# `python -m brorl...` commands run or read ("<path> <digest>") and one of its command ("shell <digest>"), so that an
# edit reruns exactly the rules running the edited code, and the dry run's reason names the file. The exempt rules
# (training, what it starts from, GPU generation) get none: their code changes are announced instead
# (helpers/train.smk). A rule whose code cannot be derived stops the workflow here, before any job, naming it.
from snakemake.exceptions import WorkflowError

from brorl.operations.rerun_policy import RerunPolicyError, add_triggers, save_cache

try:
    add_triggers(list(workflow.rules))
except RerunPolicyError as err:
    raise WorkflowError(str(err)) from None
save_cache()  # what the derivation read, kept for the next parse (every job parses the Snakefile again)
