"""The straightforward implementation: autograd + torch.multinomial + torch.optim.

It is the yardstick of the speed benchmark and, replaying the fast engine's draws, the test oracle of its maths.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from .spec import SimulationSpec

Draws = dict[int, tuple[np.ndarray, np.ndarray]]


def make_optimizer(spec: SimulationSpec, params: list[torch.Tensor]) -> torch.optim.Optimizer:
    """torch.optim.AdamW or SGD configured from the spec."""
    o = spec.optimizer
    if o.name == "sgd":
        return torch.optim.SGD(params, lr=o.lr, weight_decay=o.weight_decay)
    return torch.optim.AdamW(params, lr=o.lr, betas=o.betas, eps=o.eps, weight_decay=o.weight_decay)


def surrogate_loss(p: torch.Tensor, idx: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """L = -(1/N) sum_j r_j p_{k_j} with centered rewards r_j = R_j - mean(R), one term per draw."""
    r = rewards[idx]
    return -((r - r.mean()) * p[idx]).sum() / idx.numel()


def simulate_reference(spec: SimulationSpec, replay: Draws | None = None) -> pd.DataFrame:
    """Dense simulation; with ``replay`` (step -> (token ids, counts)) it uses those draws instead of sampling."""
    z0, rewards_np = spec.dense_init()
    rewards = torch.from_numpy(rewards_np)
    correct = torch.from_numpy(rewards_np > 0)  # the last C ids, and the anchor (id 0) when it is correct
    z = torch.tensor(z0, requires_grad=True)
    opt = make_optimizer(spec, [z])
    gen = torch.Generator().manual_seed(spec.seed)
    p0 = torch.softmax(z.detach(), 0)[correct]
    rows = []
    for t in range(spec.steps + 1):
        p = torch.softmax(z, 0)
        with torch.no_grad():
            pc = p[correct]
            rows.append((t, float(pc.sum()), 100.0 * float((pc > p0).double().mean()), float((pc - p0).min())))
        if t == spec.steps:
            break
        if replay is None:
            idx = torch.multinomial(p.detach(), spec.n, replacement=True, generator=gen)
        else:
            ids, counts = replay[t]
            idx = torch.from_numpy(np.repeat(ids, counts.astype(np.int64)))
        loss = surrogate_loss(p, idx, rewards)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if spec.freeze_anchor:
            with torch.no_grad():
                z[0] = z0[0]
    return pd.DataFrame(rows, columns=["step", "q_pos", "pct_improved", "worst_drop"])
