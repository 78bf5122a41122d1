"""brorl.hub.retry, the one retry layer of hub downloads: transient errors are retried with backoff, errors that no
retry fixes stop at the first try with a message naming the fix, and the download rules add no retries of their
own (the slurm profile's `retries:` would multiply the tries). Only huggingface_hub's network call is replaced."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from brorl.hub.retry import call_hub

huggingface_hub = pytest.importorskip("huggingface_hub")
httpx = pytest.importorskip("httpx")
errors = pytest.importorskip("huggingface_hub.errors")
ROOT = Path(__file__).resolve().parents[1]


class Failed(Exception):
    pass


def http_error(kind: type[Exception], status: int) -> Exception:
    response = httpx.Response(status, request=httpx.Request("GET", "https://huggingface.co/api/models/o/r"))
    return kind(f"{status} Client Error", response=response)


def offline_miss() -> Exception:
    error = errors.LocalEntryNotFoundError("Cannot find an appropriate cached snapshot folder")
    error.__cause__ = errors.OfflineModeIsEnabled("offline")
    return error


def run(raised: Exception, monkeypatch, attempts: int = 3) -> tuple[list[int], list[float], str]:
    tries, waits = [], []

    def call():
        tries.append(1)
        raise raised

    monkeypatch.setattr(time, "sleep", waits.append)
    with pytest.raises(Failed) as info:
        call_hub(call, "o/r@main", attempts, Failed)
    return tries, waits, str(info.value)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: http_error(errors.GatedRepoError, 403), "set HF_TOKEN to a token that has access"),
        (lambda: http_error(errors.HfHubHTTPError, 401), "set HF_TOKEN to a token that has access"),
        (lambda: http_error(errors.RepositoryNotFoundError, 404), "no such repository on the hub"),
        (lambda: http_error(errors.RevisionNotFoundError, 404), "no such revision"),
        (lambda: http_error(errors.RemoteEntryNotFoundError, 404), "no such file at this revision"),
        (offline_miss, "the hub is offline \\(HF_HUB_OFFLINE is set\\)"),
    ],
)
def test_what_no_retry_fixes_stops_at_the_first_try(monkeypatch, make, words):
    tries, waits, message = run(make(), monkeypatch)
    assert (len(tries), waits) == (1, [])
    assert message.startswith("o/r@main: ") and re.search(words, message)


@pytest.mark.parametrize(
    "make",
    [
        lambda: OSError("network unreachable"),
        lambda: http_error(errors.HfHubHTTPError, 503),  # hub downtime
        lambda: errors.LocalEntryNotFoundError("check your internet connection"),  # not offline mode: no network
    ],
)
def test_transient_errors_are_tried_attempts_times_with_backoff(monkeypatch, make):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    tries, waits, message = run(make(), monkeypatch, attempts=5)
    assert len(tries) == 5 and waits == [5, 10, 20, 40]
    assert message.startswith("o/r@main: download failed 5 times: ")
    assert run(make(), monkeypatch, attempts=1)[:2] == ([1], [])


def test_a_dataset_download_uses_the_same_layer(monkeypatch, tmp_path):
    from brorl.benchmarks.prepare import PrepareError, download_hub
    from brorl.benchmarks.registry import Source

    calls = []

    def failing(**kwargs):
        calls.append(kwargs)
        raise OSError("connection reset")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", failing)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    source = Source(kind="hub", repo_id="o/data", filename="test.jsonl", revision="a" * 40)
    with pytest.raises(PrepareError, match="o/data@a{40}: test.jsonl: download failed 3 times: connection reset"):
        download_hub(source, cache_dir=tmp_path)
    assert len(calls) == 3 and calls[0]["repo_type"] == "dataset"


@pytest.mark.parametrize(
    "smk, rule", [("model", "download_base_model"), ("data", "prepare_benchmark"), ("data", "prepare_train_data")]
)
def test_download_rules_do_not_retry_on_top(smk, rule):
    text = (ROOT / "workflow" / "rules" / f"{smk}.smk").read_text()
    block = re.search(rf"^rule {rule}:\n(.*?)(?=^\S)", text, re.S | re.M).group(1)
    assert re.findall(r"^    retries: (\d+)$", block, re.M) == ["0"]
