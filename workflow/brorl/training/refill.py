"""How dynamic sampling refills a step, shared by both engines (docs/design.md#dynamic-sampling-refilled-in-rounds).

A step starts with one wave: its prompts_per_step prompts, N rollouts each. Dynamic sampling drops every prompt whose
N scores are all alike. The dropped prompts are replaced by fresh ones until the step has its prompts, in one of two
modes (`training.dynamic_sampling.refill`):

  * rounds (default): after a wave, one refill wave of `refill_draw` prompts, sized at the keep rate measured in this
    step so far; kept groups beyond the step's prompts are dropped (never carried into the next step);
  * serial: OpenRLHF 0.11.2's own dispatch: each dropped prompt is replaced by exactly one fresh prompt, sent as
    soon as its group is scored, so a step waits on its longest chain of dropped prompts.

Both stop after `training.dynamic_sampling.max_rounds` waves (a chain of that many links, in serial mode) and train
on the groups kept. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

REFILL_MODES = ("rounds", "serial")
# A refill wave draws at most this many times the step's prompts: at a keep rate below 1/4 the step takes more waves
# rather than one unbounded draw (a policy that solves nothing, or everything, keeps almost no prompt)
MAX_DRAW_FACTOR = 4


def keep_rate(kept: int, drawn: int) -> float:
    """The step's keep rate so far, (kept + 1) / (drawn + 2): never 0 or 1 (no division by zero when nothing was
    kept yet), and within 1/(drawn + 2) of kept / drawn (a first wave of the step's whole prompt batch)."""
    return (kept + 1) / (drawn + 2)


def refill_draw(need: int, kept: int, drawn: int, step_prompts: int, mode: str) -> int:
    """Prompts the next refill wave draws to reach `need` more kept groups, given `kept` of `drawn` so far.

    serial: one per missing group (OpenRLHF's one-for-one replacement). rounds: need / keep rate, rounded up, at
    most MAX_DRAW_FACTOR x the step's prompts."""
    if mode not in REFILL_MODES:
        raise ValueError(f"refill mode must be one of {REFILL_MODES}, got {mode!r}")
    if need <= 0:
        return 0
    if mode == "serial":
        return need
    return min(math.ceil(need / keep_rate(kept, drawn)), MAX_DRAW_FACTOR * step_prompts)


def serial_depth(prompts: int, rate: float) -> float:
    """Expected waves of serial refill: 1 + the expected longest chain of dropped prompts, sum over i >= 1 of
    1 - (1 - q^i)^prompts for q = 1 - rate (each chain grows a link with probability q; a first wave of `prompts`
    independent chains, those kept at once being of length 0). At 512 prompts and rate 0.41: about 13.5."""
    q, total, i = 1.0 - rate, 1.0, 1
    while q > 0.0:
        term = 1.0 - (1.0 - q**i) ** prompts
        total += term
        if term < 1e-9:
            break
        i += 1
    return total


def _binomial_pmf(draw: int, rate: float) -> list[float]:
    """P(k of `draw` prompts kept), k = 0..draw, computed in log space (no overflow at thousands of prompts)."""
    if rate >= 1.0:
        return [0.0] * draw + [1.0]
    log_p, log_q = math.log(rate), math.log1p(-rate)
    base = math.lgamma(draw + 1)
    return [
        math.exp(base - math.lgamma(k + 1) - math.lgamma(draw - k + 1) + k * log_p + (draw - k) * log_q)
        for k in range(draw + 1)
    ]


def rounds_depth(prompts: int, rate: float) -> float:
    """Expected waves of round refill when every refill is sized at the true keep rate: the first wave of
    `prompts`, then R[shortfall] more, where R[m] = 1 + sum_k P(k kept of refill_draw(m)) R[m - k] (exact, by
    dynamic programming over the shortfall). At 512 prompts and rate 0.41: about 2.7."""
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"keep rate must be in (0, 1], got {rate}")
    more = [0.0] * (prompts + 1)
    for need in range(1, prompts + 1):
        pmf = _binomial_pmf(min(math.ceil(need / rate), MAX_DRAW_FACTOR * prompts), rate)
        rest = sum(pmf[k] * more[need - k] for k in range(1, min(need, len(pmf))))
        more[need] = (1.0 + rest) / (1.0 - pmf[0])
    first = _binomial_pmf(prompts, rate)
    return 1.0 + sum(first[k] * more[prompts - k] for k in range(prompts))


@dataclass
class Wave:
    """One wave of a step: the prompts it dispatched, the groups it kept and its seconds (generation and scoring)."""

    prompts: int
    kept: int = 0
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        """As the metrics file holds it (brorl.training.metrics field `waves`)."""
        return {"prompts": self.prompts, "kept": self.kept, "s": round(self.seconds, 6)}


def shortfall_warning(step: int, kept: int, target: int, reason: str) -> str:
    """The warning both engines print for a step that trains on fewer than its prompts."""
    return f"warning: step {step}: dynamic sampling kept {kept} of {target} prompts: {reason}"


def shortfall_reason(kept: int, target: int, waves: int, max_rounds: int, exhausted: bool) -> str | None:
    """Why a step trains on fewer than its prompts (None: it has them all)."""
    if kept >= target:
        return None
    if exhausted:
        return "the prompt data ran out"
    return f"max_rounds {max_rounds} reached" if waves >= max_rounds else "no prompt was kept"


def step_time_text(records: list[dict[str, Any]]) -> str | None:
    """How the recorded steps' time splits (metrics `waves`, `update_s`, `step_s`): waves a step and the share of
    step time in the waves and in the update, e.g. '2.7 waves a step (max 4, rounds); waves 61%, update 30% of
    the step time'; None where no step recorded its waves (metrics older than schema 9)."""
    timed = [r for r in records if r.get("waves")]
    if not timed:
        return None
    counts = [len(r["waves"]) for r in timed]
    modes = " + ".join(sorted({r.get("refill") or "off" for r in timed}))
    text = f"{sum(counts) / len(counts):.1f} waves a step (max {max(counts)}, {modes})"
    step_s = sum(r["step_s"] or 0.0 for r in timed)
    if step_s > 0:
        waves_s = sum(w["s"] for r in timed for w in r["waves"])
        update_s = sum(r.get("update_s") or 0.0 for r in timed)
        text += f"; waves {waves_s / step_s:.0%}, update {update_s / step_s:.0%} of the step time"
    return text
