"""SUMMARY.md's statistics section: the paper's paired test at equal compute, twice (brorl.analysis.equal_compute):
at equal training hours, flagged when the chosen hours differ by more than 10%, and at equal generated samples."""

from __future__ import annotations

from collections.abc import Mapping

from .summary_text import fixed as _f


def statistics_lines(sig: Mapping) -> list[str]:
    paper = sig["paper"]
    lines = [
        "### Statistics (paired one-tailed t-test over problem instances)",
        "",
        f"Paper: delta {paper['delta']}, t {paper['t']}, p {paper['p']} over {paper['n_text']} at ~"
        f"{paper['equal_time_hours']} h of equal training time, no correction.",
        "",
    ]
    if sig.get("status") != "ok":
        return lines + [f"Here: **not run**: {sig.get('reason')}", ""]
    p = sig["pooled"]
    sel = sig["selection"]
    lines.append(
        f"Here: {sig['treatment']['arm']} step {sig['treatment']['step']} vs {sig['control']['arm']} step "
        f"{sig['control']['step']} ({sel['rule']}): delta {p['delta']:.4f} (95% bootstrap CI "
        f"{p['ci_low']:.4f} .. {p['ci_high']:.4f}), t {_f(p['t'])}, p {p['p']:.3g} over n = {p['n']} "
        f"instances; effect size d_z {_f(p['effect_size'], 3)}. Significant at alpha {sig['alpha']}: "
        f"**{'yes' if p['reject'] else 'no'}**. Benchmarks significant: "
        f"{sum(r['reject'] for r in sig['benchmark'])} of {len(sig['benchmark'])} raw, "
        f"{sum(r['reject_holm'] for r in sig['benchmark'])} after Holm."
    )
    if p.get("ci_low_tasks") is not None:
        lines.append(
            f"Resampling whole tasks instead of problems (problems of one task move together): 95% CI "
            f"{p['ci_low_tasks']:.4f} .. {p['ci_high_tasks']:.4f} over {p['tasks']} tasks. Either interval covers "
            "evaluation sampling and problem heterogeneity, not training variance: each arm is one training run."
        )
    lines += ["", *compute_lines(sig)]
    return lines + [""]


def _spent(side: Mapping) -> str:
    """`arm` step k: h training hours, s k generated samples (+ start-ups apart)."""
    hours, samples, startup = side.get("hours"), side.get("samples_k"), side.get("startup_hours")
    text = f"`{side['arm']}` step {side['step']}: " + (f"{hours:.3g} h" if hours is not None else "hours not recorded")
    text += f", {samples:,.4g}k generated samples" if samples is not None else ", samples not recorded"
    return text + (f" (start-ups and relaunches apart: {startup:.3g} h)" if startup else "")


def compute_lines(sig: Mapping) -> list[str]:
    """What each compared checkpoint cost, the unequal-compute flag, and the comparison at equal samples."""
    clock = (sig.get("clock") or {}).get("text", "training clock: steps and saves, brorl.analysis.checkpoints")
    lines = [
        f"Compute behind the compared checkpoints ({clock}): "
        + "; ".join(_spent(sig[role]) for role in ("control", "treatment"))
        + "."
    ]
    flag = sig["selection"].get("flag")
    if flag:
        lines.append(f"**Warning: {flag}.** The test above compares unequal training time; read it with that.")
    lines.append(_paper_samples())
    same = sig.get("equal_samples") or {}
    if same.get("status") == "ok":
        q = same["pooled"]
        lines.append(
            f"At equal generated samples ({same['samples_k']:,.4g}k, no hardware clock): "
            f"{same['treatment']['arm']} step {same['treatment']['step']} vs {same['control']['arm']} step "
            f"{same['control']['step']}: delta {q['delta']:.4f} (95% CI {q['ci_low']:.4f} .. {q['ci_high']:.4f}), "
            f"p {q['p']:.3g} over n = {q['n']}; significant: **{'yes' if q['reject'] else 'no'}**."
        )
    elif same:
        lines.append(f"At equal generated samples: not run ({same.get('reason')}).")
    lines += disagreement_lines(sig)
    ablation = sig.get("lr_ablation")
    if ablation and ablation.get("status") == "ok":
        q = ablation["pooled"]
        lines.append(
            f"The lr-rule ablation (`{ablation['treatment']['arm']}`: BroRL's N at the unscaled lr0) against "
            f"`{ablation['control']['arm']}` by the same test ({ablation['selection']['rule']}): delta {q['delta']:.4f} "
            f"(95% CI {q['ci_low']:.4f} .. {q['ci_high']:.4f}), p {q['p']:.3g}; significant: "
            f"**{'yes' if q['reject'] else 'no'}**. BroRL differs from ProRL in N and in lr (x 2.83): this pair "
            "keeps the lr."
        )
    elif ablation and ablation.get("status") == "off":
        lines.append(
            f"The lr-rule ablation `{ablation['arm']}` is not an enabled arm: BroRL's N and its learning-rate rule "
            "(the paper's sqrt rule: x 2.83) are not separated here (enable that arm to compare it with the control)."
        )
    elif ablation:
        lines.append(f"The lr-rule ablation `{ablation['arm']}`: not run ({ablation['reason']}).")
    return lines


def disagreement_lines(sig: Mapping) -> list[str]:
    """A warning when equal hours and equal generated samples give different verdicts (or signs): the hours
    depend on the hardware and on how dynamic sampling refills a step, the samples on neither."""
    same = sig.get("equal_samples") or {}
    if same.get("status") != "ok" or sig.get("status") != "ok":
        return []
    hours, samples = sig["pooled"], same["pooled"]
    if hours["reject"] == samples["reject"] and (hours["delta"] > 0) == (samples["delta"] > 0):
        return []
    return [
        f"**Equal hours and equal generated samples disagree** (delta {hours['delta']:.4f}, "
        f"{'significant' if hours['reject'] else 'not significant'}, against {samples['delta']:.4f}, "
        f"{'significant' if samples['reject'] else 'not significant'}): the verdict depends on the clock. Hours "
        "follow the hardware and the refill mode (refill: "
        f"{sig['control'].get('refill')} vs {sig['treatment'].get('refill')}); generated samples follow neither."
    ]


def _paper_samples() -> str:
    """Appendix D's "a comparable number of total generated samples" against the paper's own Table 1 cells."""
    from .paper import load_paper

    rows = [r for r in load_paper()["table1"] if r.get("samples_k")]
    control = max((r for r in rows if r["role"] == "control"), key=lambda r: r["continued_steps"])
    treatment = sorted((r for r in rows if r["role"] == "treatment"), key=lambda r: r["continued_steps"])
    nearest = min(treatment, key=lambda r: abs(r["samples_k"] - control["samples_k"]))
    return (
        f'Paper (Appendix D): the arms used "a comparable number of total generated samples"; its Table 1 gives ProRL '
        f"+{control['continued_steps']} {control['samples_k']:,}k and BroRL +{treatment[-1]['continued_steps']} "
        f"{treatment[-1]['samples_k']:,}k; the comparable BroRL row is +{nearest['continued_steps']} "
        f"({nearest['samples_k']:,}k)."
    )
