"""results/SUMMARY.md: claim by claim (the paper's main claim, Section 4.1's simulation, Section 4.2's results), what
was reproduced, at which scale, and what differs, with every number read from the stage outputs (tables, statistics
JSON, simulation claims). Verdicts that depend on which Reasoning Gym average is used say so."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .extensions import in_batch_lines, probe_lines
from .paper import NOT_RUN, is_tiny_scale
from .significance import design_lines, paper_test_lines
from .summary_sections import benchmark_lines, figure4_lines, statistics_lines, table1_lines
from .summary_sections import fixed as _f
from .summary_sections import p_value as _g
from .summary_sections import points as _pts
from .tables import RG_CATEGORY, RG_TASK, gains_over_start, model_lines
from .tables import as_number as _num

# Table 1 columns whose gains decide the main claim; the two Reasoning Gym averages are read separately
CLAIM_COLUMNS = ("Math", "Code", RG_CATEGORY, RG_TASK)


def scale_text(spec: Mapping) -> str:
    """One paragraph: the scale this run has against the paper's."""
    arms = ", ".join(
        f"{a['name']} (N={a['n']} x {a['prompts_per_step']} prompts, {a['continued_steps']} steps)"
        for a in spec["arms"]
    )
    if is_tiny_scale(spec["engine"]):
        head = (
            "**Scale: tiny preset** (engine embedded: a tiny Qwen2 built offline on CPU, short responses, synthetic "
            "benchmarks). Its numbers test the pipeline end to end, and whether RL training improves the tiny model "
            "(below); they are not evidence about BroRL."
        )
    else:
        head = "**Scale: the paper's** (engine cluster: the ProRLv2 1.5B checkpoint, OpenRLHF on GPUs)."
    return (
        f"{head} Arms: {arms or 'none (evaluation only)'}. Benchmarks evaluated: {', '.join(spec['evaluation']['benchmarks'])} "
        f"({spec['evaluation']['n_samples']} samples each; max items per benchmark: "
        f"{spec['evaluation']['max_items'] or 'all'}). Paper: ProRL N=16 x 512 prompts (+535 steps) vs BroRL N=512 x 128 "
        f"(+191 steps) on 64 H100; 21 benchmark columns (6 math, 4 code, 11 Reasoning Gym categories), "
        '">10,000" problem instances.'
    )


def _gains(table1: pd.DataFrame, arm: str) -> tuple[pd.Series | None, dict[str, float]]:
    """The arm's last evaluated row (Math reproduced) and its change from the start row per claim column (points)."""
    return gains_over_start(table1, arm, CLAIM_COLUMNS, measured="Math")


def _verdict(gains: dict[str, dict[str, float]], rg_column: str) -> tuple[str, int, int]:
    columns = [c for c in ("Math", "Code", rg_column) if c in gains["treatment"] and c in gains["control"]]
    better = [c for c in columns if gains["treatment"][c] > gains["control"][c]]
    verdict = "holds" if columns and len(better) == len(columns) else "partly holds" if better else "does not hold"
    return verdict, len(better), len(columns)


def resolved_by_test(sig: Mapping) -> tuple[bool, str]:
    """Whether the paired one-tailed test resolves the comparison (p < alpha), and why not where it does not: a
    verdict read from point estimates alone would call noise a result."""
    if sig.get("status") != "ok":
        return False, f"no paired test ({sig.get('reason') or 'not run'})"
    pooled = sig["pooled"]
    if pooled["reject"]:
        return True, f"paired one-tailed test p {pooled['p']:.3g} < alpha {sig['alpha']}"
    return False, f"paired one-tailed test p {pooled['p']:.3g} >= alpha {sig['alpha']} over n = {pooled['n']}"


def _versus_start(rows: list, better: str) -> list[str]:
    """One line per compared checkpoint of significance.json's ``learning`` or ``models`` rows: pooled and
    per-benchmark deltas against the start checkpoint, and the verdict (``better``: what a rejection means)."""
    lines = []
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"- `{r['arm']}`: {NOT_RUN} ({r['reason']}).")
            continue
        p = r["pooled"]
        per = ", ".join(
            f"{b['group']} {100 * b['baseline_mean']:.1f} -> {100 * b['treatment_mean']:.1f} (p {_g(b['p'])})"
            for b in r["benchmark"]
        )
        verdict = (
            f"**resolved: {better}** ({', '.join(r['benchmarks_resolved']) or 'pooled'})"
            if r["resolved"]
            else "**not resolved at this scale** (p >= alpha pooled and on every benchmark after Holm)"
        )
        lines.append(
            f"- `{r['arm']}` step {r['step']} vs start: pooled delta {_pts(p['delta'])} points (95% CI "
            f"{_pts(p['ci_low'])} .. {_pts(p['ci_high'])}), p {_g(p['p'])} over n = {p['n']} problems; "
            f"{per}. Verdict: {verdict}."
        )
    return lines


# Why the tiny verdicts vary between machines (measured: docs/stages.md#the-tiny-experiment).
TINY_START_NOTE = (
    "At this scale these verdicts depend on the start model, and the start model on the machine: the tiny model's "
    "warm start stops in the middle of a sharp transition (its answer digit goes from chance to learned within a few "
    "hundred steps), so another processor's floating-point kernels, like another warm-start seed, give another start "
    "model and other verdicts. From a start near 60% both tiny arms have gained 10-14 points on the sums in every run measured; "
    "from starts of 65-71% the gains were a few points either way, and either arm could end below its start "
    "(docs/stages.md#the-tiny-experiment). Neither says anything about BroRL."
)


def _learning(sig: Mapping, spec: Mapping, table1: pd.DataFrame) -> list[str]:
    """Whether RL training improved the start model, per arm, by the paired one-tailed test (final vs start); then
    the checkpoints of evaluation.models against the start checkpoint, by the same test."""
    alpha = sig.get("alpha", spec["analysis"].get("alpha"))
    lines = [
        "## Does RL training improve the start model?",
        "",
        f"Each arm's last evaluated checkpoint against the start checkpoint on the same problems: the paired one-tailed "
        f"t-test over problems (alpha {alpha}), pooled over the benchmarks "
        "and per benchmark with Holm's correction. A sign error in the advantages or the loss would show here.",
        "",
    ]
    rows = sig.get("learning") or []
    lines += _versus_start(rows, "training improved the start model") if rows else [f"{NOT_RUN}: no arm was evaluated."]
    if rows and is_tiny_scale(spec["engine"]):
        lines += ["", TINY_START_NOTE]
    models = sig.get("models") or []
    if models:
        lines += [
            "",
            "## Evaluated checkpoints against the start checkpoint",
            "",
            "Each checkpoint of `evaluation.models` (e.g. a released model) against the start checkpoint on the same "
            f"problems, by the same paired one-tailed test (alpha {alpha}).",
            "",
            *model_lines(spec, table1, _versus_start(models, "higher than the start checkpoint")),
        ]
    return lines + [""]


def _main_claim(table1: pd.DataFrame, spec: Mapping, sig: Mapping | None = None) -> list[str]:
    roles = spec["analysis"]["comparison"]
    lines = [
        "## Main claim: larger N keeps improving where N = 16 stalls",
        "",
        "Paper (Table 1): after the 3,000-step start, BroRL (N=512) gains +1.34 Math, +2.20 Code and +1.80 "
        "Reasoning Gym points by +191 steps, while ProRL (N=16) gains +0.33 / +0.74 / +0.16 by +535 steps. "
        "Those Reasoning Gym numbers are the paper's printed average, whose rule is unpublished; the mean of the "
        "paper's own 11 category columns gives BroRL +1.32 and ProRL +0.47, and ProRL's +225 -> +535 change "
        "becomes -0.02 instead of the printed -0.65.",
        "",
    ]
    gains = {}
    for role in ("control", "treatment"):
        last, gains[role] = _gains(table1, roles[role])
        if last is None:
            lines.append(f"- {role} arm `{roles[role]}`: {NOT_RUN} (no evaluated report step).")
            del gains[role]
            continue
        text = ", ".join(f"{c} {g:+.2f}" for c, g in gains[role].items()) or "no family evaluated"
        lines.append(
            f"- {role} arm `{roles[role]}` at {last['continued steps']}: change from the start: {text} points."
        )
    resolved, why = resolved_by_test(sig or {})
    if len(gains) == 2 and not resolved:
        by_category = _verdict(gains, RG_CATEGORY)
        lines.append(
            f"- Verdict here: **not resolved at this scale** ({why}); the treatment gains more in {by_category[1]} "
            f"of {by_category[2]} families, differences the test does not tell from noise."
        )
    elif len(gains) == 2:
        by_category, by_task = _verdict(gains, RG_CATEGORY), _verdict(gains, RG_TASK)
        lines.append(
            f"- Verdict here: the treatment gains more in {by_category[1]} of {by_category[2]} families with "
            f"the category mean of Reasoning Gym, {by_task[1]} of {by_task[2]} with the task mean ({why}): the "
            f"claim **{by_category[0]}** at this scale"
            + (
                "."
                if by_category[0] == by_task[0]
                else f" (**{by_task[0]}** with the task mean: the verdict depends on the Reasoning Gym average)."
            )
        )
    else:
        lines.append("- Verdict here: **not run** (both arms need evaluated report steps).")
    lines += design_lines(spec.get("design"), sig or {}) + paper_test_lines(spec.get("design"))
    return lines + [""] + _earlier_claim(table1, roles)


def first_beating(
    final: Mapping[str, float], candidates: list[tuple[str, float | None, Mapping]], columns: tuple[str, ...]
) -> tuple[str, float | None] | None:
    """The first (label, hours) of ``candidates`` whose every column is above ``final``'s, or None."""
    for label, hours, values in candidates:
        if all(_num(values.get(c)) is not None and _num(values[c]) > _num(final[c]) for c in columns):
            return label, hours
    return None


def _paper_earlier() -> str:
    """The paper's own cells, both Reasoning Gym averages: the first BroRL row that beats ProRL's final one."""
    from .paper import column_mean, load_paper

    paper = load_paper()
    rows = {r["role"] + "@" + str(r["continued_steps"]): r for r in paper["table1"]}

    def values(key: str) -> dict:
        r = rows[key]
        return {
            "Math": r["math"],
            "Code": r["code"],
            RG_TASK: r["reasoning_gym"],
            RG_CATEGORY: column_mean(paper, "reasoning_gym", key),
        }

    control = max((k for k in rows if k.startswith("control@")), key=lambda k: rows[k]["continued_steps"])
    treatment = sorted((k for k in rows if k.startswith("treatment@")), key=lambda k: rows[k]["continued_steps"])
    parts = []
    for rg_column, name in ((RG_TASK, "the printed average"), (RG_CATEGORY, "the category mean")):
        hit = first_beating(
            values(control), [(k, rows[k]["time_h"], values(k)) for k in treatment], ("Math", "Code", rg_column)
        )
        parts.append(
            f"with {name}: "
            + (
                f"BroRL +{rows[hit[0]]['continued_steps']} ({hit[1]} h), "
                f"{rows[control]['time_h'] - hit[1]:.1f} h before ProRL's "
                f"+{rows[control]['continued_steps']} ({rows[control]['time_h']} h)"
                if hit
                else "no BroRL row"
            )
        )
    return "; ".join(parts)


def _earlier_claim(table1: pd.DataFrame, roles: Mapping[str, str]) -> list[str]:
    """Section 4.2.3's "after 98.1 h BroRL beats ProRL's final checkpoint on all three families", computed."""
    lines = [
        "Paper (Section 4.2.3): BroRL beats ProRL's final checkpoint on all three families early. From the "
        f"paper's own cells: {_paper_earlier()}.",
        "",
    ]
    evaluated = table1[table1["Math"].map(lambda x: _num(x) is not None)]
    control = evaluated[evaluated["arm"] == roles["control"]]
    treatment = evaluated[evaluated["arm"] == roles["treatment"]]
    if control.empty or treatment.empty:
        return lines + ["- Here: **not run** (both arms need evaluated report steps).", ""]
    final = control.iloc[-1]
    candidates = [(r["continued steps"], _num(r["time (h)"]), r) for _, r in treatment.iterrows()]
    for rg_column in (RG_CATEGORY, RG_TASK):
        columns = tuple(c for c in ("Math", "Code", rg_column) if _num(final.get(c)) is not None)
        hit = first_beating(final, candidates, columns)
        if hit is None:
            lines.append(
                f"- Here ({rg_column}): no treatment checkpoint beats the control's final "
                f"({final['continued steps']}) on {', '.join(columns)}."
            )
            continue
        saved = (_num(final["time (h)"]) or 0.0) - (hit[1] or 0.0)
        lines.append(
            f"- Here ({rg_column}): the treatment's {hit[0]} checkpoint ({_f(hit[1], 3)} h) beats the "
            f"control's final {final['continued steps']} ({_f(final['time (h)'], 3)} h) on "
            f"{', '.join(columns)}: {abs(saved):.3f} h {'earlier' if saved >= 0 else 'later'}."
        )
    return lines + [""]


def _simulation(claims: pd.DataFrame | None) -> list[str]:
    lines = ["## Section 4.1: token-level simulation (Figure 3)", ""]
    if claims is None:
        return lines + [f"{NOT_RUN}: the simulation stage is disabled in this configuration.", ""]
    lines += [
        "Run at the paper's scale (d = 128,000, N up to 51,200, 1,000 steps) in every configuration.",
        "",
        "Claims 2-4 are judged on the worst drop over the whole run (Figure 3 plots trajectories); the same claims "
        "read at the final step only are in their own column.",
        "",
        "| claim | paper | N | measured | holds here (over the run) | at the final step | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in claims.to_dict("records"):
        cells = [
            str(r.get(c, "")).replace("|", "/")
            for c in ("statement", "paper", "N", "measured", "holds", "holds at T", "note")
        ]
        lines.append("| " + " | ".join("" if c == "nan" else c for c in cells) + " |")
    return lines + [""]


def demote_headings(markdown: str, below: int) -> str:
    """`markdown` with its headings demoted so the highest is level below + 1 (an embedded table's own "# Table 2"
    becomes "#### Table 2" under a "###" section); text outside headings unchanged."""
    levels = [len(line) - len(line.lstrip("#")) for line in markdown.splitlines() if line.startswith("#")]
    shift = max(0, below + 1 - min(levels)) if levels else 0
    return "\n".join("#" * shift + line if line.startswith("#") else line for line in markdown.splitlines())


def stale_code_lines(stale: Mapping[str, Mapping], shown: int = 8) -> list[str]:
    """A section naming the arms trained, and the other exempt rules' outputs made, by code that has changed since
    (a code edit never reruns them), with the changed files; nothing when every output came from the current code.
    ``stale``: {"arms": arm -> files or None, "outputs": rule -> {"outputs", "changed"}} (brorl.ops.reruns.stale_code).
    """
    arms, outputs = stale.get("arms", {}), stale.get("outputs", {})
    if not arms and not outputs:
        return []

    def files(changed: list[str]) -> str:
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        return ", ".join(f"`{path}`" for path in changed[:shown]) + more

    lines = ["## Made by older code", ""]
    for arm, changed in sorted(arms.items()):
        lines.append(
            f"- arm `{arm}`: "
            + ("the code it was trained with is not recorded." if changed is None else f"{files(changed)} changed.")
        )
    for rule, entry in sorted(outputs.items()):
        what = f"- {entry['outputs']} output(s) of `{rule}`: "
        lines.append(
            what + ("made before code records." if entry["changed"] is None else f"{files(entry['changed'])} changed.")
        )
    lines += [
        "",
        "A code edit never reruns training, what training starts from, or GPU generation: the numbers below come from "
        "the code that made each output. Delete `results/train/<arm>` to retrain an arm, or add `--forcerun <rule>` "
        "to remake a rule's outputs, with the current code.",
        "",
    ]
    return lines


def render_summary(
    spec: Mapping,
    table1: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    sig: Mapping,
    claims: pd.DataFrame | None,
    table2_md: str | None,
    patterns: pd.DataFrame | None = None,
    probe: pd.DataFrame | None = None,
    probe_arms: pd.DataFrame | None = None,
    in_batch: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    stale: Mapping[str, Mapping] | None = None,
    decision: Mapping | None = None,
) -> str:
    """The SUMMARY.md text (one heading outline: embedded tables' headings sit below its sections)."""
    lines = ["# BroRL reproduction: summary", "", scale_text(spec), ""]
    lines += stale_code_lines(stale or {})
    lines += _learning(sig, spec, table1)
    lines += _main_claim(table1, spec, sig)
    if decision:  # the decision experiment's verdicts, with its registered thresholds (spec: the block)
        from .decision import decision_lines

        lines += decision_lines(decision, spec["decision"])
    lines += _simulation(claims)
    lines += probe_lines(probe, probe_arms, spec)
    lines += in_batch_lines(in_batch, spec)
    lines += ["## Section 4.2: results to regenerate", ""]
    lines += table1_lines(table1, (sig.get("clock") or {}).get("text"))
    lines += ["### Table 2 (throughput and dynamic-sampling pass rate)", ""]
    lines += [
        demote_headings(table2_md.strip(), below=3)
        if table2_md
        else f"{NOT_RUN}: the throughput stage has not produced its Table 2 in this configuration (paper: pass rate "
        "41% vs 62%, 36.5 vs 72.4 samples/s: x1.98, our ratio of the two).",
        "",
    ]
    lines += benchmark_lines(tables)
    lines += statistics_lines(sig)
    lines += figure4_lines(patterns)
    lines += [
        "Figures: Figure 1 (Math pass@1 vs training hours; every family in figure1_families), Figure 3 "
        "(simulation), Figure 4 (per-task pass@1 vs training hours by trajectory pattern) and, with two or more "
        "sweep arms, the N-sweep figure are in results/figures/ and in "
        "the HTML report (`snakemake --report`).",
        "",
    ]
    return "\n".join(lines)
