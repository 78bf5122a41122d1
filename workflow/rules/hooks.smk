# Notifications: a message when the run starts, succeeds or fails (which jobs, their logs, how to rerun), printed and,
# where the environment names them, sent to BRORL_NOTIFY_WEBHOOK and BRORL_NOTIFY_MAIL (docs/cluster.md#notifications).
# The messages are built by brorl.ops.run.notify from Snakemake's structured log events (JobEvents, installed here,
# while the Snakefile is read); Snakemake runs these hooks in the main process only (never in jobs).
import os
import sys

from snakemake.exceptions import WorkflowError

from brorl.ops.run import driver as _driver
from brorl.ops.run import notify as _notify

_job_events = _notify.JobEvents.install()

# `snakemake --profile slurm` as typed: the site against sinfo (-n too), the software route (a submission), and the
# end of a dry run (one line per rule, the route, the warnings again); main process only (brorl.ops.run.driver).
try:
    _driver.start(config, workflow.is_main_process)
except _driver.DriverError as _err:
    raise WorkflowError(str(_err)) from None


def _rerun_command():
    """The command that reruns this run (brorl.ops.run.notify.rerun_command)."""
    return _notify.rerun_command(sys.argv, sys.executable)


onstart:
    # Table 2's jobs against the profile's runtime of their last attempt (helpers/throughput.smk)
    _bench = bench_time_stop(workflow) if "bench_time_stop" in globals() else ""
    if _bench:
        raise WorkflowError(f"not started: {_bench}")
    # the pin gate (helpers/data.smk): before any job is submitted, never on -n (Snakemake runs onstart only then)
    _unpinned = (
        pin_gate_problem(workflow) if "pin_gate_problem" in globals() else ""
    )
    if _unpinned:
        raise WorkflowError(f"not started: {_unpinned}")
    # trained checkpoints damaged since their export (helpers/train.smk): named before any job reads them
    _broken = checkpoint_stop(workflow) if "checkpoint_stop" in globals() else ""
    if _broken:
        raise WorkflowError(f"not started: {_broken}")
    # the smoke gate (helpers/train.smk): GPU training waits for a passed GPU smoke run
    _smoke = smoke_gate_stop(workflow) if "smoke_gate_stop" in globals() else ""
    if _smoke:
        raise WorkflowError(f"not started: {_smoke}")
    # one trainer per run folder (helpers/train.smk): no second job for an arm another job still trains
    _trainers = trainer_stop(workflow) if "trainer_stop" in globals() else ""
    if _trainers:
        raise WorkflowError(f"not started: {_trainers}")
    _notify.notify(
        "BroRL: workflow started",
        _notify.start_message(os.getcwd(), _rerun_command(), log),
        os.environ,
    )


onsuccess:
    _notify.notify(
        "BroRL: workflow finished",
        _notify.success_message(os.getcwd(), log),
        os.environ,
    )


onerror:
    _notify.notify(
        "BroRL: workflow FAILED",
        _notify.error_message(
            os.getcwd(), log, _job_events.failed, _rerun_command()
        ),
        os.environ,
    )
