"""Logit slots with exchangeable pools: the data structure behind the fast simulation.

Tokens that share a reward and an initial logit receive identical gradients, hence identical optimizer states,
until one of them is drawn. So each such group keeps its never-drawn members in ONE pool slot (with a
multiplicity), and a token gets a slot of its own the first time it is drawn. At small N a step then costs
O(tokens drawn so far) instead of O(V); at large N every token is drawn within a few steps and the cost is that of
a dense implementation. The dynamics are exactly the dense model's: tests replay the same draws through autograd
and torch.optim.AdamW.

Layout: slots 0..G-1 are the pools of the G groups; drawn tokens are appended after them.
"""

from __future__ import annotations

import numpy as np
import torch

_FLOAT_BUFFERS = ("z", "m", "v", "p", "mp", "dz", "grad", "tmp", "mult", "cw", "p0", "reward", "drop_mask")


class Slots:
    """Flat per-slot arrays over pools and drawn tokens; ``k`` slots are in use."""

    def __init__(self, groups: list[tuple[str, int, float, float]]) -> None:
        n_groups = len(groups)
        cap = sum(size for _, size, _, _ in groups) + n_groups
        for name in _FLOAT_BUFFERS:
            setattr(self, name, np.zeros(cap))
        self.group = np.zeros(cap, dtype=np.int64)
        self.ids = np.full(cap, -1, dtype=np.int64)
        self.k = n_groups
        self.names = [g[0] for g in groups]
        self.group_reward = np.array([g[3] for g in groups], dtype=np.float64)
        self.group_correct = self.group_reward > 0
        self.first_id = np.cumsum([0] + [g[1] for g in groups[:-1]])
        self.handed_out = np.zeros(n_groups, dtype=np.int64)
        # Slot indices of each group's drawn tokens, in order of first draw (for uniform member proposals).
        self.members = [np.zeros(g[1], dtype=np.int64) for g in groups]
        self.n_members = np.zeros(n_groups, dtype=np.int64)
        for i, (_, size, logit, reward) in enumerate(groups):
            self.z[i], self.mult[i], self.reward[i], self.group[i] = logit, size, reward, i
        self.cw[:n_groups] = np.where(self.group_correct, self.mult[:n_groups], 0.0)
        self._views: dict[str, np.ndarray] = {}
        self._tviews: dict[str, torch.Tensor] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        """The slots in use of buffer ``name`` (a numpy view)."""
        view = self._views.get(name)
        if view is None:
            view = self._views[name] = getattr(self, name)[: self.k]
        return view

    def torch(self, name: str) -> torch.Tensor:
        """The same view as a torch tensor sharing memory (torch's exp and sqrt are faster here)."""
        view = self._tviews.get(name)
        if view is None:
            view = self._tviews[name] = torch.from_numpy(self[name])
        return view

    def pool(self, g: int) -> int:
        """Number of never-drawn members of group ``g``."""
        return int(self.mult[g])

    def set_initial_probabilities(self) -> None:
        """Record p at step 0 as every member's reference, and mark which slots count for the worst drop."""
        self.p0[: self.k] = self.p[: self.k]
        # 0 where a slot holds correct members (the worst drop is a min over them), +inf elsewhere.
        self.drop_mask[: self.k] = np.where(self.cw[: self.k] > 0, 0.0, np.inf)

    def group_masses(self) -> np.ndarray:
        """Probability mass of each group."""
        return np.bincount(self["group"], weights=self["mp"], minlength=len(self.names))

    def draw(self, n: int, masses: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """N i.i.d. draws from p given the group masses. Returns (slot indices, draw counts) of the distinct
        drawn slots, sorted, with the pools' draws already moved to new slots."""
        per_group = rng.multinomial(n, masses / masses.sum())
        p_max = self._group_max()
        chosen = np.concatenate(
            [self._draw_group(g, int(c), float(p_max[g]), rng) for g, c in enumerate(per_group) if c]
        )
        if n * 8 < self.k:  # few draws: sorting them beats a pass over every slot
            idx, cnt = np.unique(chosen, return_counts=True)
        else:
            cnt = np.bincount(chosen, minlength=self.k)
            idx = np.flatnonzero(cnt)
            cnt = cnt[idx]
        return self._activate_pool_draws(idx, cnt.astype(np.float64), rng)

    def _group_max(self) -> np.ndarray:
        """Largest p in each group (pools included: a bound that is still valid once a pool is empty)."""
        out = torch.zeros(len(self.names), dtype=torch.float64)
        out.scatter_reduce_(0, torch.from_numpy(self["group"]), self.torch("p"), reduce="amax")
        return out.numpy()

    def _draw_group(self, g: int, n: int, p_max: float, rng: np.random.Generator) -> np.ndarray:
        """Exact rejection sampling inside group g: a uniform member, accepted with p_member / p_max.

        Members start equal and drift slowly, so acceptance stays near 1. One uniform serves both choices: its
        integer part picks the member, its fractional part decides acceptance (independent and uniform).
        """
        pool, drawn = self.pool(g), self.members[g][: self.n_members[g]]
        p = self.p
        out, need = [], n
        while need > 0:
            u = rng.random(need)
            u *= pool + len(drawn)
            member = u.astype(np.int64)
            u -= member
            u *= p_max
            if pool == 0:  # every member has its own slot (the usual case at large N)
                slot = drawn[member]
            else:
                slot = np.where(member < pool, g, drawn[np.maximum(member - pool, 0)] if len(drawn) else g)
            keep = u < p[slot]
            out.append(slot[keep])
            need -= int(np.count_nonzero(keep))
        return np.concatenate(out) if len(out) > 1 else out[0]

    def _activate_pool_draws(
        self, idx: np.ndarray, cnt: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each pool draw picks a uniformly random never-drawn member (repeats possible); give them slots."""
        n_pools = int(np.searchsorted(idx, len(self.names)))  # idx is sorted and pools come first
        if n_pools == 0:
            return idx, cnt
        new_idx, new_cnt = [idx[n_pools:]], [cnt[n_pools:]]
        for g, c in zip(idx[:n_pools], cnt[:n_pools]):
            _, picks = np.unique(rng.integers(0, self.pool(int(g)), size=int(c)), return_counts=True)
            new_idx.append(np.arange(self.k, self.k + len(picks)))
            new_cnt.append(picks.astype(np.float64))
            self._activate(int(g), len(picks))
        return np.concatenate(new_idx), np.concatenate(new_cnt)

    def _activate(self, g: int, n_new: int) -> None:
        """Append ``n_new`` slots for members of group g's pool, copying the pool's state."""
        lo, hi = self.k, self.k + n_new
        for name in ("z", "m", "v", "p", "p0", "reward"):
            buf = getattr(self, name)
            buf[lo:hi] = buf[g]
        self.mult[lo:hi] = 1.0
        self.mult[g] -= n_new
        self.mp[lo:hi] = self.p[g]
        self.mp[g] = self.mult[g] * self.p[g]
        correct = self.group_correct[g]
        self.cw[lo:hi] = 1.0 if correct else 0.0
        self.cw[g] = self.mult[g] if correct else 0.0
        self.drop_mask[lo:hi] = 0.0 if correct else np.inf
        self.drop_mask[g] = 0.0 if correct and self.mult[g] > 0 else np.inf
        self.group[lo:hi] = g
        self.ids[lo:hi] = self.first_id[g] + self.handed_out[g] + np.arange(n_new)
        self.handed_out[g] += n_new
        self.members[g][self.n_members[g] : self.n_members[g] + n_new] = np.arange(lo, hi)
        self.n_members[g] += n_new
        self.k = hi
        self._views.clear()
        self._tviews.clear()
