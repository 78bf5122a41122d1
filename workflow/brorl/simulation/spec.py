"""Parameters of one token-level simulation run (the paper's Section 4.1), validated before any work starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

OPTIMIZERS = ("adamw", "sgd")
R_CORRECT = 1.0
R_WRONG = -1.0


class SimulationError(ValueError):
    """A parameter of the simulation is out of range; the message names it."""


@dataclass(frozen=True)
class OptimizerSpec:
    """AdamW (torch semantics: decoupled weight decay, bias correction) or plain SGD."""

    name: str = "adamw"
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        problems = []
        if self.name not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.name!r}")
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            problems.append(f"betas must be two numbers in [0, 1), got {list(self.betas)}")
        if not self.eps > 0:
            problems.append(f"eps must be > 0, got {self.eps}")
        if not self.weight_decay >= 0:
            problems.append(f"weight decay must be >= 0, got {self.weight_decay}")
        if problems:
            raise SimulationError("; ".join(problems))


@dataclass(frozen=True)
class SimulationSpec:
    """One run: vocabulary, reward split, seeded init, draws per step, steps, seed, optimizer, and the anchor.

    The paper fixes "one anchor token z0 = 5" without saying whether it is correct or incorrect, nor whether
    "fixing" means its initial logit or a frozen one: ``anchor_correct`` and ``freeze_anchor`` choose (defaults:
    incorrect and trained, the first reading).
    """

    vocab: int = 128_000
    correct: int = 10_000
    init_correct: float = 3.0
    init_anchor: float = 5.0
    n: int = 512
    steps: int = 1000
    seed: int = 0
    optimizer: OptimizerSpec = field(default_factory=OptimizerSpec)
    anchor_correct: bool = False
    freeze_anchor: bool = False

    def __post_init__(self) -> None:
        problems = []
        if self.vocab < 2:
            problems.append(f"vocab must be >= 2, got {self.vocab}")
        if not 1 <= self.correct < self.vocab:
            problems.append(
                f"correct must be between 1 and vocab - 1 (one anchor and at least one incorrect token), "
                f"got correct={self.correct} with vocab={self.vocab}"
            )
        if self.n < 1:
            problems.append(f"n (draws per step) must be >= 1, got {self.n}")
        if self.steps < 1:
            problems.append(f"steps must be >= 1, got {self.steps}")
        if self.seed < 0:
            problems.append(f"seed must be >= 0, got {self.seed}")
        for name in ("init_correct", "init_anchor"):
            if not np.isfinite(getattr(self, name)):
                problems.append(f"{name} must be finite")
        if problems:
            raise SimulationError("; ".join(problems))

    def as_dict(self) -> dict:
        """Flat, JSON-friendly description (for provenance)."""
        d = asdict(self)
        d["optimizer"]["betas"] = list(self.optimizer.betas)
        return d

    def token_groups(self) -> list[tuple[str, int, float, float]]:
        """Exchangeable token groups: (name, size, initial logit, reward).

        Tokens in one group share their reward and initial logit, so until one is drawn they stay identical.
        Layout as in the prototype: index 0 is the anchor, the last ``correct`` indices are the correct tokens
        (a correct anchor is one more correct token).
        """
        groups = [("anchor", 1, self.init_anchor, R_CORRECT if self.anchor_correct else R_WRONG)]
        if self.vocab - self.correct - 1 > 0:
            groups.append(("incorrect", self.vocab - self.correct - 1, 0.0, R_WRONG))
        groups.append(("correct", self.correct, self.init_correct, R_CORRECT))
        return groups

    @property
    def correct_tokens(self) -> int:
        """How many tokens are rewarded as correct (the anchor too when ``anchor_correct``)."""
        return self.correct + int(self.anchor_correct)

    def dense_init(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense initial logits z (V,) and rewards (V,), in the token order of ``token_groups``."""
        sizes = [g[1] for g in self.token_groups()]
        z = np.repeat([g[2] for g in self.token_groups()], sizes).astype(np.float64)
        r = np.repeat([g[3] for g in self.token_groups()], sizes).astype(np.float64)
        return z, r
