# Input functions of the GPU node preflight (workflow/rules/preflight.smk). Which jobs wait for it:
# eval_preflight_input() and train_preflight_input() in common.smk.


def preflight_need_gb():
    """Disk the run's training checkpoints need (brorl.ops.plan's estimate), for the training preflight's disk check."""
    from brorl.ops.preflight.__main__ import config_needs

    return round(config_needs(config)[0], 1)


PREFLIGHT_NEED_GB = preflight_need_gb()
