"""The result of scoring one response: what every verifier returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Score:
    """score in [0, 1] (partial credit where the verifier gives it), correct (score == 1 for binary verifiers),
    error: None, or a short reason why the response scored 0 without being judged (timeout, crash, no answer),
    math_verify: the math verifier's second verdict, math-verify alone on the same extracted answer (False where
    the response could not be judged); None where no math verdict was taken (other verifiers, a pool timeout)."""

    score: float
    correct: bool
    error: str | None = None
    math_verify: bool | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must lie in [0, 1], got {self.score}")

    def as_dict(self) -> dict:
        """Plain dict, for tables."""
        return asdict(self)


# Reasons that say the response holds no answer to judge (the model's doing, not the verifier's): tables count them
# apart from real scorer errors (timeouts, crashes), so a tiny model that never writes <answer> does not look like
# a broken verifier.
NO_ANSWER = "no <answer>...</answer> in the response"
NO_CODE = "no_code"
NO_ANSWER_REASONS = (NO_ANSWER, NO_CODE)
# A training response cut at its token budget, scored 0 by the truncation rule (training.reward.truncated: zero)
# without a verifier call: counted apart from verifier errors
TRUNCATED = "truncated at the token budget (reward 0: training.reward.truncated)"


def failed(reason: str) -> Score:
    """A response that could not be judged: scored 0, with the reason kept."""
    return Score(0.0, False, reason)
