"""The RL prompt stream: train items in a seeded order, epoch after epoch, with a cursor that a resumed run restores
(so a rerun draws exactly the prompts the interrupted run would have drawn)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PromptStream:
    """Items in a permutation seeded by (seed, epoch); `take(k)` returns the next k and advances the cursor."""

    items: list[dict]
    seed: int
    epoch: int = 0
    position: int = 0

    def __post_init__(self) -> None:
        if not self.items:
            raise ValueError("the training mix has no usable prompts")
        self._order = self._permutation(self.epoch)

    def _permutation(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, epoch]).permutation(len(self.items))

    def take(self, k: int) -> list[dict]:
        out = []
        while len(out) < k:
            if self.position == len(self.items):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._permutation(self.epoch)
            out.append(self.items[self._order[self.position]])
            self.position += 1
        return out

    def cursor(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}

    @classmethod
    def restore(cls, items: list[dict], seed: int, cursor: dict) -> PromptStream:
        return cls(items, seed, cursor["epoch"], cursor["position"])


def derived_seed(*parts: int) -> int:
    """A 31-bit seed from integers (run seed, step, round): independent streams, same on every machine."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] & 0x7FFFFFFF)
