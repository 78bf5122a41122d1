"""OpenRLHF 0.11.2's own loss, KL and log-prob functions, imported for the embedded engine on a CPU machine.

OpenRLHF imports flash_attn at module level; where the real package is absent the import-only stand-in in
workflow/stubs/ is put on sys.path first (nothing from it is ever called on this path).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

STUBS_DIR = Path(__file__).resolve().parents[3] / "stubs"  # workflow/stubs


def ensure_flash_attn_importable() -> None:
    """Put workflow/stubs on sys.path when flash_attn is not installed (CPU machines)."""
    if importlib.util.find_spec("flash_attn") is None:
        if not (STUBS_DIR / "flash_attn").is_dir():
            raise ImportError(f"flash_attn is not installed and its CPU stand-in is missing from {STUBS_DIR}")
        sys.path.insert(0, str(STUBS_DIR))


def load() -> SimpleNamespace:
    """PolicyLoss, aggregate_loss, compute_approx_kl, compute_entropy, log_probs_from_logits, masked_mean."""
    ensure_flash_attn_importable()
    from openrlhf.models.loss import PolicyLoss, aggregate_loss
    from openrlhf.models.utils import compute_approx_kl, compute_entropy, log_probs_from_logits, masked_mean

    return SimpleNamespace(
        PolicyLoss=PolicyLoss,
        aggregate_loss=aggregate_loss,
        compute_approx_kl=compute_approx_kl,
        compute_entropy=compute_entropy,
        log_probs_from_logits=log_probs_from_logits,
        masked_mean=masked_mean,
    )
