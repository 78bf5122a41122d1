"""Paper Table 2 beside the reproduction: dynamic-sampling pass rate and generation samples/s of the two compared
arms, their throughput ratio, and (our extension) every other measured configuration and equal-samples ratio.

The paper measured on its 64-GPU training setup. The primary throughput rows therefore come from the training runs
(generated samples over generation time, all GPUs of the run). The standalone benchmark runs one engine on one GPU,
so it is compared per GPU: each arm at its per-GPU share of a step (prompts/step / PAPER_GPUS prompts x N, about 128
vs 1,024 concurrent sequences) against the paper's value / PAPER_GPUS.

Pure: records in, a DataFrame out (written by brorl.reporting.tables.write_table). Cells the paper does not give say
"not given"; reproduced cells that do not exist (training not run, layout not measured, too noisy) say why.
"""

from __future__ import annotations

import pandas as pd

from ..analysis.paper import TINY_SCALE

PAPER = {
    "pass_rate_pct": {"control": 41.0, "treatment": 62.0},  # paper Table 2: 41% (N=16) vs 62% (N=512)
    "samples_per_s": {"control": 36.5, "treatment": 72.4},  # paper Table 2 (64 H100, same hardware)
    "ratio": 1.98,  # derived: 72.4 / 36.5 = 1.984 (the paper prints the two rates and "nearly 100% faster", no ratio)
}
PAPER_GPUS = 64  # the paper's training setup (64 H100; it gives no node split), on which Table 2 was measured
NOT_GIVEN = "not given"
NOT_AVAILABLE = "not available"
NOT_REPORTED = "not reported"
# a layout whose KV cache overflowed measured vLLM's recomputation of preempted requests, not decoding
PREEMPTED = "PREEMPTED (measures recompute)"
COLUMNS = ["quantity", "setting", "paper", "reproduced", "difference", "note"]


def _pc(flag: bool) -> str:
    return f"prefix caching {'on' if flag else 'off'}"


def _find(results: list[dict], prompts: int, n: int, pc: bool) -> dict | None:
    for r in results:
        c = r["configuration"]
        if (c["prompts"], c["n"], c["prefix_caching"]) == (prompts, n, pc):
            return r
    return None


def _difference(paper: object, reproduced: object) -> object:
    if isinstance(paper, (int, float)) and isinstance(reproduced, (int, float)):
        return reproduced - paper
    return "-"


def _throughput_note(r: dict) -> str:
    s, v, pcache = r["samples_per_s"], r["variability"], r["prefix_cache"]
    cv = "CV unknown" if s["cv"] is None else f"CV {s['cv']:.1%}"
    hit = "hit rate n/a" if pcache["hit_rate"] is None else f"prefix-cache hit rate {pcache['hit_rate']:.1%}"
    note = f"median of {s['n']} (min {s['min']:.4g}, max {s['max']:.4g}), {cv}; {hit}"
    note += f"; {PREEMPTED}: {r['preemptions']['total']} request(s)" if preempted(r) else ""
    return note if v["trusted"] else f"{note}; {v['reason']}"


def preempted(r: dict) -> bool:
    """Whether vLLM preempted requests in the layout's timed runs (records before schema 2 say nothing)."""
    return bool((r.get("preemptions") or {}).get("total"))


def _row_without_value(quantity: str, setting: str, paper: object, marker: str, note: str) -> dict:
    """A Table 2 row whose reproduced value is missing or withheld (``marker`` says which, ``note`` why)."""
    return {
        "quantity": quantity,
        "setting": setting,
        "paper": paper,
        "reproduced": marker,
        "difference": "-",
        "note": note,
    }


def _ratio_row(quantity: str, setting: str, paper: object, num: dict | None, den: dict | None, missing: str) -> dict:
    """samples/s of ``num`` over ``den``; withheld when either is missing or not steady enough."""
    if num is None or den is None:
        return _row_without_value(quantity, setting, paper, NOT_AVAILABLE, missing)
    noisy = [f"{r['name']}: {r['variability']['reason']}" for r in (num, den) if not r["variability"]["trusted"]]
    if noisy:
        return _row_without_value(quantity, setting, paper, NOT_REPORTED, "ratio withheld, " + "; ".join(noisy))
    flagged = [r["name"] for r in (num, den) if preempted(r)]
    ratio = num["samples_per_s"]["median"] / den["samples_per_s"]["median"]
    return {
        "quantity": quantity,
        "setting": setting,
        "paper": paper,
        "reproduced": ratio,
        "difference": _difference(paper, ratio),
        "note": f"{num['name']} / {den['name']} (medians)" + (f"; {', '.join(flagged)} {PREEMPTED}" if flagged else ""),
    }


def per_gpu_layout(arm: dict, gpus: int) -> tuple[int, int]:
    """(prompts, n) of one GPU's share of the arm's step when the step's prompts are spread over ``gpus`` GPUs."""
    return max(1, arm["prompts"] // gpus), arm["n"]


def _training_rows(arms: dict[str, dict], rates: dict[str, tuple[float | None, str]], setup: str) -> list[dict]:
    """Generation samples/s of the training runs (the paper's own measurement), and their ratio."""
    rows = []
    for role in ("control", "treatment"):
        arm, (rate, note) = arms[role], rates.get(role, (None, "training has not run"))
        paper = PAPER["samples_per_s"][role]
        rows.append(
            {
                "quantity": "generation throughput in training (samples/s)",
                "setting": f"{arm['label']} (N={arm['n']}, {arm['prompts']} prompts/step), {setup}",
                "paper": paper,
                "reproduced": NOT_AVAILABLE if rate is None else rate,
                "difference": "-" if rate is None else rate - paper,
                "note": note,
            }
        )
    num, den = rates.get("treatment", (None, ""))[0], rates.get("control", (None, ""))[0]
    rows.append(
        {
            "quantity": "throughput ratio BroRL / ProRL, in training",
            "setting": setup,
            "paper": PAPER["ratio"],
            "reproduced": NOT_AVAILABLE if not (num and den) else num / den,
            "difference": "-" if not (num and den) else num / den - PAPER["ratio"],
            "note": "the two runs' generation throughputs" if num and den else "an arm's training has not run",
        }
    )
    return rows


def _pass_rate_rows(
    arms: dict[str, dict], pass_rates: dict[str, float | None], pass_rate_notes: dict[str, str]
) -> list[dict]:
    """The dynamic-sampling pass rate of each compared arm beside the paper's."""
    rows = []
    for role in ("control", "treatment"):
        arm, rate = arms[role], pass_rates.get(role)
        paper = PAPER["pass_rate_pct"][role]
        reproduced = NOT_AVAILABLE if rate is None else 100.0 * rate
        rows.append(
            {
                "quantity": "dynamic-sampling pass rate (%)",
                "setting": f"{arm['label']} (N={arm['n']}, {arm['prompts']} prompts/step)",
                "paper": paper,
                "reproduced": reproduced,
                "difference": _difference(paper, reproduced),
                "note": pass_rate_notes.get(role, ""),
            }
        )
    return rows


def _standalone_row(
    results: list[dict], arms: dict[str, dict], role: str, gpus: int, main_pc: bool, scale_note: str
) -> tuple[dict, dict | None]:
    """One arm's standalone row (its share of a step on ``gpus`` GPUs) and its record (None: not measured)."""
    arm = arms[role]
    prompts, n = per_gpu_layout(arm, gpus)
    rec = _find(results, prompts, n, main_pc)
    share = "per GPU" if gpus > 1 else "whole step"
    setting = (
        f"{arm['label']}: {prompts} x {n} ({'its share of a step on ' + str(gpus) + ' GPUs' if gpus > 1 else 'a step'}), "
        f"{_pc(main_pc)}"
    )
    paper = PAPER["samples_per_s"][role] / gpus
    quantity = f"standalone generation throughput, {share} (samples/s)"
    if rec is None:
        note = f"layout {prompts} x {n} ({_pc(main_pc)}) not measured: add it to throughput.layouts"
        return _row_without_value(quantity, setting, paper, NOT_AVAILABLE, note), None
    median = rec["samples_per_s"]["median"]
    return {
        "quantity": quantity,
        "setting": setting,
        "paper": paper,
        "reproduced": median,
        "difference": _difference(paper, median),
        "note": f"{_throughput_note(rec)}; {scale_note}"
        + (f"; paper value = its total / {gpus} GPUs" if gpus > 1 else ""),
    }, rec


def _standalone_rows(
    results: list[dict], arms: dict[str, dict], scale_note: str, gpus: int, main_pc: bool
) -> tuple[list[dict], set[str]]:
    """Each compared arm's standalone samples/s and their ratio, and the names of the records those rows show."""
    rows, arm_records = [], {}
    for role in ("control", "treatment"):
        row, arm_records[role] = _standalone_row(results, arms, role, gpus, main_pc, scale_note)
        rows.append(row)
    share = "per GPU" if gpus > 1 else "whole step"
    rows.append(
        _ratio_row(
            f"throughput ratio BroRL / ProRL, standalone {share}",
            f"{arms['treatment']['label']} / {arms['control']['label']}, {_pc(main_pc)}",
            PAPER["ratio"],
            arm_records["treatment"],
            arm_records["control"],
            "a compared arm's layout was not measured",
        )
    )
    return rows, {rec["name"] for rec in arm_records.values() if rec is not None}


def _other_configuration_rows(results: list[dict], used: set[str]) -> list[dict]:
    """The samples/s of every measured configuration not in ``used`` (prefix caching on first, then by name)."""
    rows = []
    for rec in sorted(results, key=lambda r: (not r["configuration"]["prefix_caching"], r["name"])):
        if rec["name"] in used:
            continue
        c = rec["configuration"]
        rows.append(
            {
                "quantity": "generation throughput (samples/s)",
                "setting": f"{c['prompts']} x {c['n']}, {_pc(c['prefix_caching'])}",
                "paper": NOT_GIVEN,
                "reproduced": rec["samples_per_s"]["median"],
                "difference": "-",
                "note": _throughput_note(rec),
            }
        )
    return rows


def _extension_ratio_rows(results: list[dict], arms: dict[str, dict], main_pc: bool) -> list[dict]:
    """The ratios the paper does not give: the arms at the other prefix-caching setting, equal samples, on / off."""
    rows = []
    for pc in sorted({r["configuration"]["prefix_caching"] for r in results}, reverse=True):
        if pc != main_pc:
            num = _find(results, arms["treatment"]["prompts"], arms["treatment"]["n"], pc)
            den = _find(results, arms["control"]["prompts"], arms["control"]["n"], pc)
            rows.append(
                _ratio_row(
                    "throughput ratio BroRL / ProRL",
                    f"{_pc(pc)}",
                    NOT_GIVEN,
                    num,
                    den,
                    "a compared arm's layout was not measured",
                )
            )
        for small, large in equal_samples_pairs([r for r in results if r["configuration"]["prefix_caching"] == pc]):
            rows.append(
                _ratio_row(
                    "throughput ratio at equal samples (larger N / smaller N)",
                    f"{large['configuration']['layout']} / {small['configuration']['layout']}, {_pc(pc)}",
                    NOT_GIVEN,
                    large,
                    small,
                    "",
                )
            )
    for pc_on, pc_off in _prefix_caching_pairs(results):
        rows.append(
            _ratio_row(
                "prefix-caching speed-up (on / off)", pc_on["configuration"]["layout"], NOT_GIVEN, pc_on, pc_off, ""
            )
        )
    return rows


def table2(
    results: list[dict],
    arms: dict[str, dict],
    pass_rates: dict[str, float | None],
    pass_rate_notes: dict[str, str],
    scale_note: str,
    training_rates: dict[str, tuple[float | None, str]] | None = None,
    setup: str = "",
    gpus: int = PAPER_GPUS,
    tiny: bool = False,
) -> pd.DataFrame:
    """Table 2 rows.

    results: throughput JSON records (brorl.throughput.bench). arms: ``{"control": {...}, "treatment": {...}}``,
    each with name, label, n, prompts (per step). pass_rates: overall pass rate (0..1) per role, None when not
    available, with the reason in pass_rate_notes. scale_note: what was measured where (added to each row's note).
    training_rates: (samples/s, note) per role from the training metrics; setup: the training runs' hardware in
    words. gpus: GPUs a step's prompts are spread over for the standalone per-GPU comparison (the paper's 64; 1
    compares whole steps, as at tiny scale). tiny: a tiny CPU run, whose differences to the paper's H100 values are
    TINY_SCALE (the paper's values are still shown).
    """
    rows = _pass_rate_rows(arms, pass_rates, pass_rate_notes)
    rows += _training_rows(arms, training_rates or {}, setup)
    main_pc = any(r["configuration"]["prefix_caching"] for r in results) or not results
    standalone, used = _standalone_rows(results, arms, scale_note, gpus, main_pc)
    rows += standalone
    # our extension: every other measured configuration, then the other prefix-caching setting and equal-samples pairs
    rows += _other_configuration_rows(results, used)
    rows += _extension_ratio_rows(results, arms, main_pc)
    table = pd.DataFrame(rows, columns=COLUMNS)
    if tiny:  # CPU samples/s minus H100 samples/s means nothing
        table["difference"] = [TINY_SCALE if isinstance(d, (int, float)) else d for d in table["difference"]]
    return table


def equal_samples_pairs(results: list[dict]) -> list[tuple[dict, dict]]:
    """(smaller N, larger N) pairs of layouts with the same total samples, among records of one setting."""
    pairs = []
    for i, a in enumerate(results):
        for b in results[i + 1 :]:
            ca, cb = a["configuration"], b["configuration"]
            if ca["samples"] == cb["samples"] and ca["n"] != cb["n"]:
                pairs.append((a, b) if ca["n"] < cb["n"] else (b, a))
    return sorted(pairs, key=lambda p: (p[0]["configuration"]["samples"], p[0]["configuration"]["n"]))


def _prefix_caching_pairs(results: list[dict]) -> list[tuple[dict, dict]]:
    on = {
        (r["configuration"]["prompts"], r["configuration"]["n"]): r
        for r in results
        if r["configuration"]["prefix_caching"]
    }
    pairs = []
    for r in results:
        key = (r["configuration"]["prompts"], r["configuration"]["n"])
        if not r["configuration"]["prefix_caching"] and key in on:
            pairs.append((on[key], r))
    return sorted(pairs, key=lambda p: p[0]["name"])


def figure_frame(results: list[dict]) -> pd.DataFrame:
    """Long table for the samples/s-vs-N figure: only layouts whose total samples another layout with another N
    shares (the equal-total-samples comparison)."""
    rows = []
    for r in results:
        c = r["configuration"]
        partners = [
            o for o in results if o["configuration"]["samples"] == c["samples"] and o["configuration"]["n"] != c["n"]
        ]
        if not partners:
            continue
        s = r["samples_per_s"]
        rows.append(
            {
                "n": c["n"],
                "prompts": c["prompts"],
                "samples": c["samples"],
                "prefix caching": "on" if c["prefix_caching"] else "off",
                "median": s["median"],
                "min": s["min"],
                "max": s["max"],
                "trusted": r["variability"]["trusted"],
            }
        )
    return pd.DataFrame(rows, columns=["n", "prompts", "samples", "prefix caching", "median", "min", "max", "trusted"])
