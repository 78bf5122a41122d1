"""The training reward, ONE module for both engines: OpenRLHF calls `reward_func` through `--reward.remote_url`
(workflow/scripts/openrlhf_reward.py) and the embedded engine calls `score_rollouts`.

Rewards come from the same verifiers as evaluation (brorl.scoring), each call in a worker process under a hard
timeout (`score_batch`), so a hanging or crashing verifier or program costs one sample's reward, never the run.
`rewards` are the verifier's score in [0, 1] (code: fraction of tests passed, training.reward.code); `scores` are
binary (1 only when fully correct) and drive dynamic filtering, so zero-variance groups are dropped even for
continuous rewards (OpenRLHF's dynamic filter tests the mean of `scores` per group).

A response cut at its token budget scores 0 without a verifier call where training.reward.truncated is `zero` (the
public ProRLv2 recipes' "stop properly" rule), in both engines here: the embedded engine passes vLLM's
finish_reason, and for OpenRLHF a response that does not end with one of the tokenizer's special tokens (EOS) was
cut (OpenRLHF decodes the generated ids with their special tokens; vLLM keeps the EOS it stopped at).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

# Import the verifiers now: score_batch forks its workers from this process, and a child that inherits them
# does not pay math-verify's import (about a second) on every call OpenRLHF makes.
import brorl.scoring.code  # noqa: E402,F401
import brorl.scoring.instructions  # noqa: E402,F401
import brorl.scoring.math  # noqa: E402,F401
import brorl.scoring.reasoning_gym  # noqa: E402,F401
import brorl.scoring.stem  # noqa: E402,F401
from brorl.scoring import Score, ScoringPool, failed, score_batch
from brorl.scoring.reasoning import as_scored, opens_reasoning, strip_special_tail
from brorl.scoring.result import TRUNCATED

try:  # the IFEval checkers as well (lighteval and NLTK load in about a second)
    brorl.scoring.instructions.registry()
except Exception as error:  # reported, and every instruction-following sample then carries this reason
    print(
        f"brorl reward: the IFEval checkers cannot be loaded ({error}); instruction-following samples score 0",
        file=sys.stderr,
    )

CODE_REWARD = os.environ.get("BRORL_CODE_REWARD", "fraction")  # training.reward.code, set by the launcher
CODE_TIMEOUT_S = float(os.environ.get("BRORL_CODE_TIMEOUT_S", "5.0"))  # training.reward.code_timeout_s
# the start model tokenizer's special tokens (EOS, padding, ...), set by the launcher (launch.special_tokens)
SPECIAL_TOKENS: tuple[str, ...] = tuple(json.loads(os.environ.get("BRORL_SPECIAL_TOKENS", "[]")))
TRUNCATED_RULES = ("zero", "verifier")  # training.reward.truncated: reward 0, or the verifier's score
TRUNCATED_REWARD = os.environ.get(
    "BRORL_TRUNCATED_REWARD", "verifier"
)  # training.reward.truncated, set by the launcher


def parse_label(label: Any) -> dict:
    """The train item a label carries: a record dict, or its JSON text (OpenRLHF passes data[label_key])."""
    item = json.loads(label) if isinstance(label, str) else label
    if not isinstance(item, dict) or "scorer" not in item:
        raise ValueError(f"label is not a train item record with a 'scorer' field: {str(label)[:80]!r}")
    return item


def label_id(label: Any) -> str | None:
    """The prompt id a label's train item carries (None when the label cannot be read: it scores 0 anyway)."""
    try:
        return str(parse_label(label)["id"])
    except (ValueError, TypeError, KeyError):
        return None


def after_prompt(query: str, prompt: str, tail: int = 64) -> str:
    """The generated part of OpenRLHF's query (the decoded prompt + response tokens). Where the decoded prompt does
    not reproduce the prompt text (a tokenizer that does not round-trip it, or a prompt OpenRLHF cut to fit
    max_len), the response starts after the last occurrence of the prompt's final characters."""
    if query.startswith(prompt):
        return query[len(prompt) :]
    end = prompt[-tail:]
    position = query.rfind(end) if end else -1
    return query[position + len(end) :] if position >= 0 else query


def stopped_properly(query: str, prompt: str, special_tokens: Sequence[str] | None = None) -> bool:
    """Whether an OpenRLHF sample's response ended on a special token (EOS) rather than at its token budget."""
    tokens = SPECIAL_TOKENS if special_tokens is None else special_tokens
    response = after_prompt(query, prompt)
    return strip_special_tail(response, tokens) != response


def response_of(query: str, prompt: str, special_tokens: Sequence[str] | None = None) -> str:
    """The text the verifiers score for one OpenRLHF sample: the response without the special tokens OpenRLHF's
    decode leaves at its end (EOS; default: the launcher's SPECIAL_TOKENS), with the reasoning block's opening tag
    where the chat template wrote it (brorl.scoring.reasoning: the text the embedded engine and evaluation score)."""
    tokens = SPECIAL_TOKENS if special_tokens is None else special_tokens
    response = strip_special_tail(after_prompt(query, prompt), tokens)
    return as_scored(response, opens_reasoning(prompt))


def training_item(item: dict, code_reward: str, code_timeout_s: float) -> dict:
    """The item with the training verifier options (code: partial credit and the training time limit)."""
    if item.get("scorer") == "code":
        return {**item, "scorer_options": {"reward": code_reward, "time_limit_s": code_timeout_s}}
    return item


def score_rollouts(
    items: Sequence[dict],
    responses: Sequence[str],
    *,
    truncated: Sequence[bool] | None = None,
    truncated_reward: str = TRUNCATED_REWARD,
    workers: int = 2,
    code_reward: str = CODE_REWARD,
    code_timeout_s: float = CODE_TIMEOUT_S,
    progress: bool = False,
    pool: ScoringPool | None = None,
) -> list[Score]:
    """One Score per (item, response), in order; every call under score_batch's hard timeout (``pool``: workers
    kept across calls, e.g. a trainer's, instead of ``workers`` fresh ones). ``truncated``: which responses hit
    their token budget; with ``truncated_reward`` "zero" those score 0 (error TRUNCATED) without a verifier call."""
    if len(items) != len(responses):
        raise ValueError(f"{len(items)} items but {len(responses)} responses")
    if truncated_reward not in TRUNCATED_RULES:
        raise ValueError(f"training.reward.truncated must be one of {TRUNCATED_RULES}, got {truncated_reward!r}")
    cut = list(truncated) if truncated is not None and truncated_reward == "zero" else [False] * len(items)
    if len(cut) != len(items):
        raise ValueError(f"{len(items)} items but {len(cut)} truncation flags")
    results: list[Score] = [failed(TRUNCATED)] * len(items)
    judged = [i for i, c in enumerate(cut) if not c]
    pairs = [(training_item(items[i], code_reward, code_timeout_s), responses[i]) for i in judged]
    for i, s in zip(judged, score_batch(pairs, workers=workers, progress=progress, pool=pool) if pairs else []):
        results[i] = s
    return results


def score_queries(queries: list[str], prompts: list[str], labels: list) -> tuple[list[Score], int]:
    """One Score per OpenRLHF sample and the number of unreadable labels. Never raises: a bad label or any failure
    scores 0 with the reason in Score.error."""
    n = len(queries)
    results: list[Score] = [failed("not scored")] * n
    bad_labels = 0
    try:
        items, responses, truncated, where = [], [], [], []
        for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
            try:
                items.append(parse_label(label))
            except (ValueError, TypeError) as error:
                bad_labels += 1
                results[i] = failed(f"bad label: {error}"[:160])
                continue
            responses.append(response_of(str(query), str(prompt)))
            # without the tokenizer's special tokens no response can be told apart (the launcher always sets them)
            truncated.append(bool(SPECIAL_TOKENS) and not stopped_properly(str(query), str(prompt)))
            where.append(i)
        if items:
            scored = score_rollouts(items, responses, truncated=truncated, truncated_reward=TRUNCATED_REWARD, workers=1)
            for i, s in zip(where, scored):
                results[i] = s
    except Exception as error:  # the reward must never take training down
        print(f"brorl reward_func: scoring failed, rewards 0 for this call: {error!r}", file=sys.stderr)
        results = [r if r.error != "not scored" else failed(f"scoring failed: {error!r}"[:160]) for r in results]
    return results, bad_labels


def is_verifier_error(score: Score) -> bool:
    """Scored 0 without a judgement for a reason other than the truncation rule (no answer, crash, timeout)."""
    return score.error is not None and score.error != TRUNCATED


def is_timeout(score: Score) -> bool:
    """A verifier call stopped by its hard time limit (brorl.scoring.pool), as opposed to another failure."""
    return bool(score.error) and score.error.startswith("timeout")


def reward_result(results: Sequence[Score], bad_labels: int) -> dict:
    """OpenRLHF's reward dictionary: rewards (verifier score), binary scores (dynamic filtering) and extra logs,
    which OpenRLHF logs per step as train/<key>: the shares of samples whose verifier failed or timed out, and of
    those the truncation rule scored 0."""
    import torch

    return {
        "rewards": torch.tensor([s.score for s in results], dtype=torch.float32),
        "scores": torch.tensor([1.0 if s.correct else 0.0 for s in results], dtype=torch.float32),
        "extra_logs": {
            "verifier_errors": torch.tensor([float(is_verifier_error(s)) for s in results]).mean(),
            "truncated_zeroed": torch.tensor([float(s.error == TRUNCATED) for s in results]).mean(),
            "verifier_timeouts": torch.tensor([float(is_timeout(s)) for s in results]).mean(),
            "bad_labels": torch.tensor(float(bad_labels)),
        },
    }


def reward_func(queries: list[str], prompts: list[str], labels: list) -> dict:
    """OpenRLHF's custom reward interface (score_queries + reward_result). Never raises: a bad label or any failure
    gives reward 0 for that sample and is counted in extra_logs (an exception here would crash OpenRLHF training)."""
    return reward_result(*score_queries(queries, prompts, labels))
