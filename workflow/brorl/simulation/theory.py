"""Pure maths of the paper's Section 2: Theorem 1 terms, the first-order change of Q_pos, Lemma 2.

Everything here takes plain numpy arrays over the vocabulary (or over the distinct tokens of a group) and has
no state. Shapes: ``p`` (V,) probabilities, ``correct`` (V,) bool, ``sampled`` (V,) bool marking the DISTINCT
tokens drawn at least once. Theorem 1 is exact to first order only with that distinct-token definition (see
docs/design.md#theorem-1-counts-distinct-sampled-tokens).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class TheoremTerms:
    """The quantities of Theorem 1 for one draw of N tokens (all sums over distinct tokens)."""

    q_pos: float
    a2: float  # sum of p^2 over sampled correct tokens
    b2: float  # sum of p^2 over sampled incorrect tokens
    u_pos2: float  # sum of p^2 over unsampled correct tokens
    u_neg2: float  # sum of p^2 over unsampled incorrect tokens
    p_pos: float  # sampled correct mass
    p_neg: float  # sampled incorrect mass
    s_r: float  # R_c P_pos + R_w P_neg

    def as_dict(self) -> dict[str, float]:
        """Plain dict, for tables and JSON."""
        return asdict(self)


def theorem_terms(
    p: np.ndarray, correct: np.ndarray, sampled: np.ndarray, r_correct: float, r_wrong: float
) -> TheoremTerms:
    """Theorem 1's sums for distribution ``p`` and the distinct sampled set ``sampled``."""
    p2 = p * p
    q_pos = float(p[correct].sum())
    a2 = float(p2[correct & sampled].sum())
    b2 = float(p2[~correct & sampled].sum())
    u_pos2 = float(p2[correct & ~sampled].sum())
    u_neg2 = float(p2[~correct & ~sampled].sum())
    p_pos = float(p[correct & sampled].sum())
    p_neg = float(p[~correct & sampled].sum())
    s_r = r_correct * p_pos + r_wrong * p_neg
    return TheoremTerms(q_pos, a2, b2, u_pos2, u_neg2, p_pos, p_neg, s_r)


def theorem1_components(
    t: TheoremTerms, eta: float, n: int, r_correct: float, r_wrong: float
) -> tuple[float, float, float]:
    """The three terms of Theorem 1's dQ_pos: (sampled-correct >= 0, sampled-incorrect >= 0, unsampled coupling)."""
    scale = eta / n
    q_neg = 1.0 - t.q_pos
    first = scale * (r_correct - t.s_r) * q_neg * t.a2
    second = scale * (t.s_r - r_wrong) * t.q_pos * t.b2
    coupling = scale * t.s_r * (t.q_pos * t.u_neg2 - q_neg * t.u_pos2)
    return first, second, coupling


def theorem1_dq(t: TheoremTerms, eta: float, n: int, r_correct: float, r_wrong: float) -> float:
    """Theorem 1's first-order prediction of dQ_pos."""
    return float(sum(theorem1_components(t, eta, n, r_correct, r_wrong)))


def theorem1_update(p: np.ndarray, rewards: np.ndarray, sampled: np.ndarray, eta: float, n: int) -> np.ndarray:
    """The logit update Theorem 1 describes: dz_i = (eta/N) p_i (R_i 1[i sampled] - S_R), once per distinct token."""
    w = np.where(sampled, rewards, 0.0)
    s_r = float(np.dot(w, p))
    return (eta / n) * p * (w - s_r)


def first_order_dq(p: np.ndarray, correct: np.ndarray, dz: np.ndarray) -> float:
    """Exact directional derivative of Q_pos along ``dz``: sum_pos p_i dz_i - Q_pos sum_k p_k dz_k."""
    pdz = p * dz
    return float(pdz[correct].sum() - p[correct].sum() * pdz.sum())


def exact_dq(p: np.ndarray, correct: np.ndarray, dz: np.ndarray) -> float:
    """Exact change of Q_pos after z -> z + dz, computed without cancellation (expm1 form)."""
    e = np.expm1(dz)
    mean_e = float(np.dot(p, e))
    # p_i' - p_i = p_i (e_i - mean_e) / (1 + mean_e): no subtraction of two nearly equal probabilities.
    return float(np.dot(p[correct], e[correct] - mean_e) / (1.0 + mean_e))


def expected_unsampled_square_mass(p: np.ndarray, n: int) -> float:
    """Corollary 3: E[U_2] = sum_i p_i^2 (1 - p_i)^N after N i.i.d. draws."""
    return float(np.sum(p * p * np.exp(n * np.log1p(-p))))


def softmax(z: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over a 1-D logit vector."""
    e = np.exp(z - z.max())
    return e / e.sum()
