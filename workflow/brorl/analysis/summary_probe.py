"""SUMMARY.md's section on the mass-balance probe (our extension): each arm's last probed step against the start,
the worst drop against chance, and the two compared arms against each other, paired by probe."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .paper import NOT_RUN


def probe_lines(probe: pd.DataFrame | None, between: pd.DataFrame | None, spec: Mapping) -> list[str]:
    """The section: the trajectory table's last rows (results/tables/probe.csv) and the between-arm tests
    (results/tables/probe_between_arms.csv)."""
    lines = ["## The mass-balance probe (our extension: Figure 3's question on the model)", ""]
    if probe is None:
        return lines + [f"{NOT_RUN}: the probe is off in this configuration (`probe.enabled`).", ""]
    labels = {arm["name"]: f"{arm.get('label') or arm['name']} (N = {arm['n']})" for arm in spec["arms"]}
    last = probe.sort_values("step").groupby("arm", sort=False).tail(1)
    first = probe[probe["step"] == 0].set_index("arm")
    probes, samples = int(last["probes"].iloc[0]), int(last["samples"].iloc[0])
    q05 = 100 * float(probe["worst_drop_null_q05"].iloc[0])
    lines += [
        f"{probes} fixed problems x {samples} samples at the rollout temperature, at the start and every saved step "
        "(results/tables/probe.md, results/figures/probe.png and probe_arms.png). A probe fell or rose when its pass "
        f"rate moved beyond the noise of the difference; with no change at all about 2% of the probes (here about "
        f"{0.023 * probes:.1f}) fall by chance, so a few fallen probes are not yet evidence of shrinkage. The worst "
        f"drop of one probe is set against the same chance: redrawing every probe twice from the start's own pass "
        f"rate, it is {q05:+.1f} points or lower in 5% of redraws (its p below).",
        "",
        "| arm | last step | mean pass rate: start -> last (%) | fell since the start | rose since the start "
        "| worst drop of one probe (points) | its p (no change) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in last.itertuples(index=False):
        start = first.loc[r.arm, "mean_pass_rate"]
        fell, rose = round(r.fell_since_start * r.probes), round(r.rose_since_start * r.probes)
        lines.append(
            f"| {labels.get(r.arm, r.arm)} | {r.step} | {100 * start:.2f} -> {100 * r.mean_pass_rate:.2f} "
            f"| {fell} of {r.probes} | {rose} of {r.probes} | {100 * r.worst_drop:+.1f} | {r.worst_drop_p:.3f} |"
        )
    return lines + [""] + between_lines(between, labels)


def between_lines(between: pd.DataFrame | None, labels: Mapping[str, str]) -> list[str]:
    """The treatment against the control on the same probes, at equal compute and at equal optimizer steps."""
    if between is None or between.empty:
        return []
    row0 = between.iloc[0]
    control, treatment = labels.get(row0["control"], row0["control"]), labels.get(row0["treatment"], row0["treatment"])
    lines = [
        f"{treatment} against {control} on the same probes (results/tables/probe_between_arms.md): the mean "
        "difference of their pass rates (one-tailed paired t over probes, alternative: the treatment higher) and the "
        "probes that fell since the start in one arm only (exact binomial: does the control lose more?).",
        "",
        "| checkpoints | steps (control / treatment) | mean pass rate (%) control / treatment | difference (points, 95% CI) "
        "| p | fell only in control / only in treatment | p |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in between.itertuples(index=False):
        if r.probes != r.probes:  # NaN: the pair could not be formed
            lines.append(f"| {r.basis} | {r.note} | | | | | |")
            continue
        lines.append(
            f"| {r.basis} | {int(r.control_step)} / {int(r.treatment_step)} "
            f"| {100 * r.control_mean:.2f} / {100 * r.treatment_mean:.2f} "
            f"| {100 * r.delta:+.2f} ({100 * r.ci_low:+.2f}, {100 * r.ci_high:+.2f}) | {r.p:.3g} "
            f"| {int(r.fell_only_control)} / {int(r.fell_only_treatment)} | {r.p_fell:.3g} |"
        )
    return lines + [""]


def in_batch_lines(in_batch: tuple[pd.DataFrame, pd.DataFrame] | None, spec: Mapping) -> list[str]:
    """The in-batch probe (results/tables/probe_in_batch.csv and its between-arm test), when it ran: per arm and
    probed step the step's own prompts before and after its update."""
    if in_batch is None:
        return []
    rows, between = in_batch
    labels = {arm["name"]: f"{arm.get('label') or arm['name']} (N = {arm['n']})" for arm in spec["arms"]}
    lines = [
        "### The in-batch probe: Theorem 1 on the model",
        "",
        "Each probed step's own prompts, sampled just before and just after its update (results/tables/"
        "probe_in_batch.md, results/figures/probe_in_batch.png). Updated: neither all right nor all wrong among the "
        "step's rollouts; fell: beyond the noise of the difference; p: the share of updated prompts that fell against "
        "no change (both draws redrawn from the before-rates).",
        "",
        "| arm | step | prompts (updated) | mean pass rate before -> after (%) | updated prompts that fell | p |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows.itertuples(index=False):
        p = "" if r.p_fell != r.p_fell else f"{r.p_fell:.3f}"
        lines.append(
            f"| {labels.get(r.arm, r.arm)} | {r.step} | {r.prompts} ({r.updated}) "
            f"| {100 * r.before:.2f} -> {100 * r.after:.2f} | {r.fell_updated} of {r.updated} | {p} |"
        )
    lines.append("")
    for r in between.itertuples(index=False):
        control, treatment = labels.get(r.control, r.control), labels.get(r.treatment, r.treatment)
        if r.p != r.p:
            lines.append(f"- Step {r.step}, {control} against {treatment}: not tested ({r.note}).")
            continue
        lines.append(
            f"- Step {r.step}: {int(r.control_fell)} of {int(r.control_updated)} updated prompts fell in {control}, "
            f"{int(r.treatment_fell)} of {int(r.treatment_updated)} in {treatment}; do the control's fall more often? "
            f"Fisher's exact p {r.p:.3g}."
        )
    return lines + [""]
