"""The one retry layer of every hub download (the start checkpoint, benchmark and training data files).

``call_hub`` runs a huggingface_hub call with tenacity: up to ``attempts`` tries, 5 s then 10 s, 20 s ... (at most
60 s) apart, on errors that a later try can fix (connection lost, timeouts, hub downtime). An error that no retry
fixes (no such repository or revision, a gated or private repository without a valid HF_TOKEN, HF_HUB_OFFLINE with
the files missing from the cache) stops at once with a message naming the fix. huggingface_hub resumes a partial
file from its cache, so a retry does not start over.

This is the only layer: the rules that download (download_base_model, prepare_benchmark, prepare_train_data) set
``retries: 0``, so a failing download runs ``attempts`` times, not ``attempts`` x the rule's attempts.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

FIRST_WAIT_S = 5
MAX_WAIT_S = 60


def permanent_problem(error: BaseException, what: str) -> str | None:
    """Why retrying ``error`` cannot help (a sentence naming the fix), or None when a later try may succeed."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, OfflineModeIsEnabled) or (
        isinstance(error, LocalEntryNotFoundError)
        and (constants.HF_HUB_OFFLINE or isinstance(error.__cause__, OfflineModeIsEnabled))
    ):
        return (
            f"{what}: the hub is offline (HF_HUB_OFFLINE is set) and the files are not in the cache: "
            "unset HF_HUB_OFFLINE, or fill the cache on a machine with network access"
        )
    if isinstance(error, LocalEntryNotFoundError):
        return None  # the network or the hub is down and nothing is cached: a later try may reach it
    if isinstance(error, GatedRepoError) or status in (401, 403):
        return f"{what}: access refused (a gated or private repository): set HF_TOKEN to a token that has access"
    if isinstance(error, RepositoryNotFoundError):
        return f"{what}: no such repository on the hub (or it is private and HF_TOKEN is unset or invalid)"
    if isinstance(error, RevisionNotFoundError):
        return f"{what}: the repository has no such revision (branch, tag or commit): check the configured revision"
    if isinstance(error, EntryNotFoundError):
        return f"{what}: the repository has no such file at this revision"
    if isinstance(error, HFValidationError) or (isinstance(error, HfHubHTTPError) and status == 404):
        return f"{what}: the hub refused the request ({error})"
    return None


def call_hub(call: Callable[[], T], what: str, attempts: int, error: type[Exception]) -> T:
    """``call()``'s result, retried with backoff on transient errors; ``error`` (naming ``what``) when it fails
    for good: at once for a permanent problem, after ``attempts`` tries otherwise."""
    import tenacity

    if attempts < 1:
        raise error(f"{what}: attempts must be at least 1, not {attempts}")

    def log_retry(state: tenacity.RetryCallState) -> None:
        wait = state.next_action.sleep if state.next_action else 0
        print(
            f"{what}: try {state.attempt_number}/{attempts} failed ({state.outcome.exception()}); "
            f"retrying in {wait:.0f} s",
            file=sys.stderr,
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=FIRST_WAIT_S, min=FIRST_WAIT_S, max=MAX_WAIT_S),
        retry=tenacity.retry_if_exception(lambda e: permanent_problem(e, what) is None),
        before_sleep=log_retry,
        sleep=lambda seconds: time.sleep(seconds),  # looked up at call time, so tests can replace time.sleep
        reraise=True,
    )
    tries = 0

    def counted() -> T:
        nonlocal tries
        tries += 1
        return call()

    try:
        return retrying(counted)
    except Exception as e:
        problem = permanent_problem(e, what)
        if problem:
            raise error(f"{problem} [{type(e).__name__}: {e}]") from e
        raise error(f"{what}: download failed {tries} times: {e}") from e


__all__ = ["call_hub", "permanent_problem"]
