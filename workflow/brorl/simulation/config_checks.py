"""The simulation section's check across keys, for brorl.config."""

from __future__ import annotations


def check_simulation(cfg: dict) -> list[str]:
    """The correct tokens leave room for the anchor token 0, which is incorrect."""
    sim = cfg["simulation"]
    if sim["correct"] >= sim["vocab"]:
        return [
            f"config key 'simulation.correct': {sim['correct']} must be less than simulation.vocab = "
            f"{sim['vocab']} (token 0, the anchor, is incorrect)"
        ]
    return []
