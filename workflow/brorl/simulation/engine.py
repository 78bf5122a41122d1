"""The token-level RLVR simulation of the paper's Section 4.1 (Figure 3), fast and exact.

Each step: N i.i.d. draws from p = softmax(z); centered rewards r_j = R_j - mean(R); the linear surrogate
L = -(1/N) sum_j r_j p_{k_j}, whose gradient is taken in closed form,
    dL/dz_m = (p_m / N) (S - w_m),  w_m = n_m (R_m - b),  S = sum_k w_k p_k,
then one AdamW or SGD step. Metrics are recorded for steps 0..T (state after t updates); the Theorem 1 terms of
the update t -> t+1 are recorded on row t.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from .optimizers import optimizer_step
from .slots import Slots
from .spec import R_CORRECT, R_WRONG, SimulationError, SimulationSpec
from .theory import TheoremTerms, theorem1_components

# Columns of the per-step table; the first four are the stage's contract (figure, claims).
COLUMNS = (
    "step",
    "q_pos",
    "pct_improved",
    "worst_drop",
    "reward_mean",
    "a2",
    "b2",
    "u_pos2",
    "u_neg2",
    "p_pos",
    "p_neg",
    "s_r",
    "thm1_sampled_correct",
    "thm1_sampled_incorrect",
    "thm1_unsampled_coupling",
    "dq_theorem1",
    "dq_first_order",
    "dq_actual",
    "distinct_drawn",
)

DrawHook = Callable[[int, np.ndarray, np.ndarray], None]


@contextmanager
def _single_thread():
    """One torch and one BLAS thread: sums then do not depend on the core count (bit-for-bit reruns), and
    BLAS threads spinning beside torch's OpenMP pool cannot slow a 100k-element dot product a thousandfold."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(before)


def _softmax(s: Slots) -> np.ndarray:
    """p = softmax(z) per member over the whole vocabulary; returns the probability mass of each group."""
    p = s["p"]
    np.subtract(s["z"], s["z"].max(), out=p)
    s.torch("p").exp_()
    masses = np.array([s.weighted_sum(g, p) for g in s.groups])
    total = masses.sum()
    if not np.isfinite(total) or total <= 0:  # logits became inf or NaN: say so instead of sampling from NaN
        raise SimulationError("the logits overflowed: the optimizer diverged (lower its lr)")
    p /= total
    return masses / total


class _Draws:
    """One step's draws and the sums that the update and Theorem 1 need (distinct drawn tokens).

    Sparse (few draws): gathered at the drawn slots. Dense (many draws): group slice by group, where every
    slot of a group shares its reward, so the weights w_k = n_k (R_k - b) need no per-slot reward.
    """

    def __init__(self, s: Slots, per_group: np.ndarray, idx: np.ndarray | None, cnt: np.ndarray, n: int) -> None:
        self.idx, self.cnt, self.n = idx, cnt, n
        self.baseline = float(sum(g.reward * c for g, c in zip(s.groups, per_group))) / n
        p = s["p"]
        drawn = {True: [0.0, 0.0], False: [0.0, 0.0]}  # correct? -> [sum p, sum p^2] over distinct drawn
        if idx is not None:
            pd_, reward = p[idx], s["reward"][idx]
            self.w = cnt * (reward - self.baseline)
            self.s_sum = float(np.dot(self.w, pd_))
            self.wp = self.w * pd_
            pos = reward > 0
            for flag, sel in ((True, pos), (False, ~pos)):
                drawn[flag] = [float(pd_[sel].sum()), float(np.dot(pd_[sel], pd_[sel]))]
        else:
            self.s_sum = 0.0
            self.np_ = {}
            for g in s.groups:
                sl = slice(g.off, g.off + g.used)
                cp = cnt[sl] * p[sl]  # n_k p_k
                self.np_[g.name] = (sl, cp, g.reward - self.baseline)
                self.s_sum += (g.reward - self.baseline) * float(cp.sum())
                hit = p[sl][cnt[sl] > 0]
                drawn[g.correct][0] += float(hit.sum())
                drawn[g.correct][1] += float(np.dot(hit, hit))
        (self.p_pos, self.a2), (self.p_neg, self.b2) = drawn[True], drawn[False]

    def gradient(self, s: Slots) -> None:
        """Closed-form dL/dz_m = (p_m / N)(S - w_m) into s["grad"]: one dense pass plus the drawn slots."""
        grad, n = s["grad"], self.n
        np.multiply(s["p"], self.s_sum / n, out=grad)
        if self.idx is not None:
            grad[self.idx] -= self.wp / n
            return
        for sl, cp, coef in self.np_.values():
            torch.from_numpy(grad[sl]).sub_(torch.from_numpy(cp), alpha=coef / n)

    def slot_ids(self, s: Slots) -> tuple[np.ndarray, np.ndarray]:
        """Vocabulary ids and counts of the drawn tokens (for tests that replay the draws)."""
        idx = self.idx if self.idx is not None else np.flatnonzero(self.cnt)
        cnt = self.cnt if self.idx is not None else self.cnt[idx]
        return s.token_ids(idx), cnt


def _theorem_terms(s: Slots, d: _Draws, q_pos: float, r_correct: float, r_wrong: float) -> TheoremTerms:
    """Theorem 1's sums over the DISTINCT drawn slots, with the (centered) rewards the update sees."""
    p = s["p"]
    sq = {True: 0.0, False: 0.0}
    for g in s.groups:
        sq[g.correct] += s.weighted_sum(g, p, p)
    return TheoremTerms(
        q_pos=q_pos,
        a2=d.a2,
        b2=d.b2,
        u_pos2=sq[True] - d.a2,
        u_neg2=sq[False] - d.b2,
        p_pos=d.p_pos,
        p_neg=d.p_neg,
        s_r=r_correct * d.p_pos + r_wrong * d.p_neg,
    )


def simulate(spec: SimulationSpec, progress: bool = False, on_draws: DrawHook | None = None) -> pd.DataFrame:
    """Run one simulation and return the per-step table (columns ``COLUMNS``, T+1 rows)."""
    with _single_thread():
        return _simulate(spec, progress, on_draws)


def _simulate(spec: SimulationSpec, progress: bool, on_draws: DrawHook | None) -> pd.DataFrame:
    rng = np.random.default_rng(spec.seed)
    s = Slots(spec.token_groups())
    correct = [g for g in s.groups if g.correct]
    frozen = next(g for g in s.groups if g.name == "anchor") if spec.freeze_anchor else None
    opt, n, steps = spec.optimizer, spec.n, spec.steps
    rec = {c: np.full(steps + 1, np.nan) for c in COLUMNS}
    rec["step"] = np.arange(steps + 1, dtype=np.float64)

    masses = _softmax(s)
    for g in s.groups:
        g.p0 = float(s.p[g.off])
    for t in tqdm(range(steps + 1), desc=f"simulate N={n} seed={spec.seed}", disable=not progress, mininterval=1):
        p = s["p"]
        q_pos = float(sum(m for g, m in zip(s.groups, masses) if g.correct))
        rec["q_pos"][t] = q_pos
        rec["pct_improved"][t] = 100.0 * sum(s.count_above(g, p, g.p0) for g in correct) / spec.correct_tokens
        rec["worst_drop"][t] = min(s.min_member(g, p) - g.p0 for g in correct)
        if t > 0:
            rec["dq_actual"][t - 1] = q_pos - rec["q_pos"][t - 1]
        if t == steps:
            break

        draws = _Draws(s, *s.draw(n, masses, rng), n)
        if on_draws is not None:
            on_draws(t, *draws.slot_ids(s))
        draws.gradient(s)
        baseline = draws.baseline
        terms = _theorem_terms(s, draws, q_pos, R_CORRECT - baseline, R_WRONG - baseline)
        _record_terms(rec, t, terms, opt.lr, n, baseline)
        rec["distinct_drawn"][t] = float(sum(g.handed_out for g in s.groups))

        optimizer_step(opt, t + 1, s.torch("z"), s.torch("grad"), s.torch("m"), s.torch("v"), s.torch("dz"))
        if frozen is not None:  # a frozen anchor keeps its logit: neither the update nor weight decay moves it
            s["z"][frozen.off : frozen.off + frozen.used] = frozen.logit
            s["dz"][frozen.off : frozen.off + frozen.used] = 0.0
        # Exact first-order change of Q_pos along the update actually taken (any optimizer).
        pdz = {g.name: s.weighted_sum(g, s["p"], s["dz"]) for g in s.groups}
        pdz_pos = sum(pdz[g.name] for g in correct)
        rec["dq_first_order"][t] = pdz_pos - q_pos * sum(pdz.values())
        masses = _softmax(s)

    return pd.DataFrame(rec, columns=list(COLUMNS)).astype({"step": np.int64})


def _record_terms(rec: dict, t: int, terms: TheoremTerms, lr: float, n: int, baseline: float) -> None:
    """Write Theorem 1's terms for the update at step t (centered rewards, eta = lr)."""
    for key in ("a2", "b2", "u_pos2", "u_neg2", "p_pos", "p_neg", "s_r"):
        rec[key][t] = getattr(terms, key)
    rec["reward_mean"][t] = baseline
    parts = theorem1_components(terms, lr, n, R_CORRECT - baseline, R_WRONG - baseline)
    rec["thm1_sampled_correct"][t], rec["thm1_sampled_incorrect"][t], rec["thm1_unsampled_coupling"][t] = parts
    rec["dq_theorem1"][t] = sum(parts)
