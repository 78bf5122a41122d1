"""Logit slots with exchangeable pools: the data structure behind the fast simulation.

Tokens that share a reward and an initial logit receive identical gradients, hence identical optimizer states,
until one of them is drawn. So each such group keeps its never-drawn members in ONE pool slot (with a
multiplicity), and a token gets a slot of its own the first time it is drawn. At small N a step then costs
O(tokens drawn so far) instead of O(V); at large N every token is drawn within a few steps and the cost is that of
a dense implementation. The dynamics are exactly the dense model's: tests replay the same draws through autograd
and torch.optim.AdamW.

Layout: each group owns a contiguous range [off, off + size + 1): its pool slot at ``off``, then its drawn
tokens in order of first draw. Groups are laid out from smallest to largest, so the unused tail of a range (dead
slots: multiplicity 0, never read by any sum) is small except in the last group, which lies past the ``span`` of
slots the vector maths runs over.
"""

from __future__ import annotations

import numpy as np
import torch

_BUFFERS = ("z", "m", "v", "p", "dz", "grad")


class Group:
    """Bookkeeping of one group: where its slots are and how many members are still pooled."""

    def __init__(self, name: str, size: int, logit: float, reward: float, first_id: int, off: int) -> None:
        self.name, self.size, self.logit, self.reward, self.first_id, self.off = (
            name,
            size,
            logit,
            reward,
            first_id,
            off,
        )
        self.pool = size  # never-drawn members
        self.used = 1  # slots in use: the pool slot plus one per drawn token
        self.p0 = float("nan")  # each member's probability at step 0 (all equal)

    @property
    def correct(self) -> bool:
        return self.reward > 0

    @property
    def members(self) -> slice:
        """Slots of drawn tokens (multiplicity 1 each)."""
        return slice(self.off + 1, self.off + self.used)

    @property
    def handed_out(self) -> int:
        return self.size - self.pool


class Slots:
    """Per-slot buffers (z, Adam moments, p, dz, grad) over all groups; vector maths runs over ``span``."""

    def __init__(self, groups: list[tuple[str, int, float, float]]) -> None:
        first_ids = np.cumsum([0] + [g[1] for g in groups[:-1]])
        order = sorted(range(len(groups)), key=lambda i: groups[i][1])
        self.groups: list[Group] = []
        off = 0
        for i in order:
            name, size, logit, reward = groups[i]
            self.groups.append(Group(name, size, logit, reward, int(first_ids[i]), off))
            off += size + 1
        for name in _BUFFERS:
            setattr(self, name, np.zeros(off))
        self.reward = np.zeros(off)
        for g in self.groups:
            self.z[g.off : g.off + g.size + 1] = g.logit  # dead slots start like the pool: harmless, finite
            self.reward[g.off : g.off + g.size + 1] = g.reward
        self.span = 0
        self._update_span()

    def _update_span(self) -> None:
        last = self.groups[-1]
        self.span = last.off + last.used
        self._views = {name: getattr(self, name)[: self.span] for name in (*_BUFFERS, "reward")}
        self._tviews = {name: torch.from_numpy(v) for name, v in self._views.items()}

    def __getitem__(self, name: str) -> np.ndarray:
        """Buffer ``name`` over the span (a numpy view)."""
        return self._views[name]

    def torch(self, name: str) -> torch.Tensor:
        """The same view as a torch tensor sharing memory (torch's exp is faster here)."""
        return self._tviews[name]

    def weighted_sum(self, g: Group, x: np.ndarray, y: np.ndarray | None = None) -> float:
        """Sum over g's members (pool counted with its multiplicity) of x, or of x * y."""
        ms = g.members
        if y is None:
            return float(x[ms].sum()) + g.pool * float(x[g.off])
        return float(np.dot(x[ms], y[ms])) + g.pool * float(x[g.off] * y[g.off])

    def min_member(self, g: Group, x: np.ndarray) -> float:
        """Smallest x over g's members (the pool slot only while it holds members)."""
        lo = float(x[g.members].min()) if g.used > 1 else np.inf
        return min(lo, float(x[g.off])) if g.pool > 0 else lo

    def count_above(self, g: Group, x: np.ndarray, threshold: float) -> float:
        """Number of g's members whose x exceeds ``threshold``."""
        return float(np.count_nonzero(x[g.members] > threshold)) + (g.pool if x[g.off] > threshold else 0.0)

    def draw(
        self, n: int, masses: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """N i.i.d. draws from p given the group masses, pools' draws already moved to new slots.

        Returns (draws per group, idx, counts): with few draws next to the span, the distinct drawn slots ``idx``
        and their counts; otherwise idx is None and counts is dense over the span (no index arrays to build).
        """
        per_group = rng.multinomial(n, masses / masses.sum())
        chosen = np.concatenate([self._draw_group(g, int(c), rng) for g, c in zip(self.groups, per_group) if c])
        if n * 8 < self.span:  # few draws: sorting them beats a pass over every slot
            idx, cnt = _distinct_counts(chosen)
            idx, cnt = self._activate_pool_draws(idx, cnt, rng)
            return per_group, idx, cnt
        # Float counts straight from bincount's weights: a separate int -> float cast is one more 1 MB pass.
        cnt = np.bincount(chosen, weights=np.ones(len(chosen)), minlength=len(self.z))
        for g in self.groups:
            if cnt[g.off]:
                picks = self._pick_new_members(g, int(cnt[g.off]), rng)
                cnt[g.off + g.used : g.off + g.used + len(picks)] = picks
                cnt[g.off] = 0.0
                self._activate(g, len(picks))
        return per_group, None, cnt[: self.span]

    @staticmethod
    def _pick_new_members(g: Group, draws: int, rng: np.random.Generator) -> np.ndarray:
        """Draw counts of the distinct never-drawn members hit by ``draws`` uniform picks from g's pool."""
        return _distinct_counts(rng.integers(0, g.pool, size=draws))[1]

    def _draw_group(self, g: Group, n: int, rng: np.random.Generator) -> np.ndarray:
        """Exact rejection sampling inside a group: a uniform member, accepted with p_member / max p.

        Members start equal and drift slowly, so acceptance stays near 1. One uniform serves both choices: its
        integer part picks the member, its fractional part decides acceptance (independent and uniform).
        """
        p = self.p
        p_max = float(p[g.members].max()) if g.used > 1 else 0.0
        if g.pool > 0:
            p_max = max(p_max, float(p[g.off]))
        out, need, n_members = [], n, g.pool + g.used - 1
        while need > 0:
            u = rng.random(need)
            u *= n_members
            member = u.astype(np.int64)
            u -= member
            u *= p_max
            # members 0..pool-1 are the pool slot; member pool + j is drawn token j at off + 1 + j
            slot = member + (g.off + 1 - g.pool)
            if g.pool > 0:
                np.maximum(slot, g.off, out=slot)
            keep = u < p[slot]
            out.append(slot[keep])
            need -= int(np.count_nonzero(keep))
        return np.concatenate(out) if len(out) > 1 else out[0]

    def _activate_pool_draws(
        self, idx: np.ndarray, cnt: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each pool draw picks a uniformly random never-drawn member (repeats possible); give them slots."""
        offs = np.array([g.off for g in self.groups])
        pos = np.minimum(np.searchsorted(idx, offs), len(idx) - 1)  # idx is sorted
        hit = idx[pos] == offs
        if not hit.any():
            return idx, cnt
        keep = np.ones(len(idx), dtype=bool)
        keep[pos[hit]] = False
        new_idx, new_cnt = [idx[keep]], [cnt[keep]]
        for g, i in zip(self.groups, pos):
            if idx[i] != g.off:
                continue
            picks = self._pick_new_members(g, int(cnt[i]), rng)
            new_idx.append(np.arange(g.off + g.used, g.off + g.used + len(picks)))
            new_cnt.append(picks)
            self._activate(g, len(picks))
        return np.concatenate(new_idx), np.concatenate(new_cnt)

    def _activate(self, g: Group, n_new: int) -> None:
        """Give ``n_new`` pool members of g their own slots, copying the pool's state."""
        lo, hi = g.off + g.used, g.off + g.used + n_new
        for name in ("z", "m", "v", "p"):
            buf = getattr(self, name)
            buf[lo:hi] = buf[g.off]
        g.pool -= n_new
        g.used += n_new
        if g is self.groups[-1]:
            self._update_span()

    def token_ids(self, idx: np.ndarray) -> np.ndarray:
        """Vocabulary ids of slots (drawn tokens only): the j-th drawn member of a group is first_id + j."""
        out = np.empty(len(idx), dtype=np.int64)
        for g in self.groups:
            inside = (idx > g.off) & (idx < g.off + g.used)
            out[inside] = g.first_id + idx[inside] - g.off - 1
        return out


def _distinct_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and their (float) counts; a fast path for the usual case of no repeats."""
    if len(values) <= 256:
        ordered = np.sort(values)
        if len(ordered) < 2 or (ordered[1:] != ordered[:-1]).all():
            return ordered, np.ones(len(ordered))
    distinct, counts = np.unique(values, return_counts=True)
    return distinct, counts.astype(np.float64)
