"""When a job reruns for code: each rule's rerun trigger derived from what its command runs (docs/cluster.md#rerun-policy).

Every rule with a shell command gets params (Snakemake's ``params`` rerun trigger) of one string per file its
commands run or read, ``"<path> <digest>"`` (brorl.reporting.source_closure finds the files,
brorl.reporting.source_digest hashes them so that comments, docstrings and formatting change nothing), and one
``"shell <digest>"`` of its command with whitespace collapsed. A behaviour edit of a module reruns exactly the rules
whose commands run it, and the dry run's reason names the module ("Params have changed ... before: brorl/x.py 1a2b..
now: brorl/x.py 3c4d.."). Two tables below are the only hand-written part: rules exempt from code reruns (training,
what training starts from, GPU generation: announced instead, never rerun) and modules that change no result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...reporting.code_record import EXEMPT_MODULES, code_digest, code_sources
from ...reporting.source_cache import save_cache
from ...reporting.source_closure import REPO, ClosureError, module_index
from ...reporting.source_digest import shell_digest

__all__ = ["save_cache"]

# Rules a code edit never reruns. A rerun of training would stop at its protected weights (or retrain days of GPUs);
# the rules it starts from would rerun it through their outputs; GPU generation is the evaluation's GPU cost. Their
# code is recorded where it matters (each training segment's manifest) and a change is announced: the dry run, `make
# status` and SUMMARY.md name the arms trained by older code. Delete an output to remake it with the new code.
EXEMPT_RULES = {
    "train_ppo": "trains an arm: protected weights, days of GPUs",
    "export_checkpoint": "links a trained step out of the run folder (protected)",
    "prepare_prompts": "an arm's prompt file: training reads it",
    "prepare_train_data": "the RL prompt mix: training reads it",
    "download_base_model": "the start checkpoint: training and evaluation start from it",
    "extend_context": "the start checkpoint for the training and evaluation contexts",
    "build_tiny_model": "the tiny start model: training starts from it",
    "warm_start_tiny_model": "the tiny start model: training starts from it",
    "download_eval_model": "a checkpoint of evaluation.models: its GPU generation reads it",
    "extend_eval_model": "a checkpoint of evaluation.models: its GPU generation reads it",
    "preflight_eval_node": "a GPU node check: every GPU generation job waits on its result",
    "preflight_train_node": "a GPU node check: every training job waits on its result",
    "preflight_cross_node": "a two-node check: every multi-node training job waits on its result",
    "generate_samples": "GPU generation (evaluation): a verifier edit reruns scoring only",
    "generate_probe": "GPU generation (the mass-balance probe)",
    "generate_in_batch": "GPU generation (the in-batch probe)",
    "register_decision": "the decision experiment's pre-registration: written once, before any result, never again",
}

COMMAND = re.compile(r"\bpython3?\s+-m\s+(brorl(?:\.\w+)*)(?:[ \t]+([A-Za-z][\w-]*))?")


class RerunPolicyError(ValueError):
    """A rule whose rerun trigger cannot be derived, or an exemption that names nothing (names the rule)."""


def rule_commands(rule: str, shell: str | None) -> list[tuple[str, str | None]]:
    """(entry module, subcommand) of every ``python -m brorl...`` in a rule's shell command."""
    found = [(m[1], m[2]) for m in COMMAND.finditer(shell or "")]
    if not found:
        raise RerunPolicyError(
            f"rule {rule}: its command runs no `python -m brorl.<stage>`, so the code it runs cannot be derived for "
            "its rerun trigger: call the package from the shell (workflow/rules conventions), not run: or script:"
        )
    return found


def trigger_params(rule: str, shell: str | None) -> list[str]:
    """The params that rerun a rule when the code it runs or its command changes: "<path> <digest>" per file and
    "shell <digest>"; none for an exempt rule."""
    if rule in EXEMPT_RULES:
        return []
    try:
        sources = code_sources(rule_commands(rule, shell))
    except ClosureError as err:
        raise RerunPolicyError(f"rule {rule}: {err}") from err
    return [f"{path} {digest}" for path, digest in sources.items()] + [f"shell {shell_digest(shell or '')}"]


def check_exemptions(rules: Iterable[str]) -> None:
    """RerunPolicyError when an exemption names a rule of no workflow or a module that does not exist."""
    unknown_rules = sorted(set(EXEMPT_RULES) - set(rules))
    unknown_modules = sorted(set(EXEMPT_MODULES) - set(module_index()))
    if unknown_rules or unknown_modules:
        raise RerunPolicyError(
            "brorl.ops.reruns.rerun_policy exempts what does not exist: "
            + "; ".join([f"rule {name}" for name in unknown_rules] + [f"module {name}" for name in unknown_modules])
        )


def add_triggers(rules: Iterable) -> dict[str, tuple[str, dict[str, str], list]]:
    """Append each Snakemake rule's trigger params (``rule.set_params``); an exempt rule's command gets instead a
    first line naming its code's digest (brorl.ops.reruns.stale_code.code_comment). Returns exempt rule -> (digest,
    code, commands); RerunPolicyError naming the first rule whose trigger cannot be derived (a run:, script: or wrapper rule,
    or a command outside the package)."""
    rules = list(rules)
    check_exemptions([rule.name for rule in rules])
    exempt = {}
    for rule in rules:
        if rule.norun:
            continue  # a target rule (all, prepare_data): it runs nothing
        if rule.shellcmd is None:
            raise RerunPolicyError(
                f"rule {rule.name}: a run:, script: or wrapper rule, whose code the rerun trigger cannot derive: call "
                "`python -m brorl.<stage>` from shell:"
            )
        if rule.name in EXEMPT_RULES:
            commands = rule_commands(rule.name, rule.shellcmd)
            code = code_sources(commands)
            exempt[rule.name] = (code_digest(code), code, commands)
            rule.shellcmd = code_comment(exempt[rule.name][0]) + rule.shellcmd.lstrip("\n")
        else:
            rule.set_params(*trigger_params(rule.name, rule.shellcmd))
    return exempt


def current_code(commands: Mapping[str, list]) -> dict[str, tuple[str, dict[str, str]]]:
    """Rule -> (digest, code) of the code each rule's commands run now."""
    current = {}
    for rule, pairs in commands.items():
        code = code_sources([tuple(pair) for pair in pairs])
        current[rule] = (code_digest(code), code)
    return current


def code_comment(digest: str) -> str:
    """The first line of an exempt rule's command: which code it runs (a shell comment: it changes nothing; Snakemake
    keeps the command in its metadata, where brorl.ops.reruns.stale_code reads it back)."""
    return f"# code {digest}: recorded for stale-code notes (docs/cluster.md#rerun-policy)\n"


def relative_to_repo(path: Path) -> str:
    return path.resolve().relative_to(REPO).as_posix()
