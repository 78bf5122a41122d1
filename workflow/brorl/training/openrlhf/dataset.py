"""Train mix (benchmark records, jsonl) -> OpenRLHF's prompt dataset: one `{"input": prompt, "label": record JSON}`
per line, read with `--data.input_key input --data.label_key label --data.apply_chat_template`.

OpenRLHF hands `label` verbatim to `reward_func`, which parses the record back (brorl.training.reward.parse_label).
Prompts longer than context.prompt_max_len tokens (after the chat template) are left out and listed in the summary,
never dropped silently; OpenRLHF itself would only truncate them.

The file holds `passes` passes over the mix, each shuffled with its own seed derived from the arm's seed, and the
run uses one OpenRLHF episode: a step never meets the end of the data (OpenRLHF would train it on the prompts left,
a partial step, and at fewer than one prompt per rank crash in seqlen balancing), and the order of the passes is
fixed by the config (OpenRLHF's own loader shuffle is seeded through the job hook, scripts/openrlhf_site).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable
from pathlib import Path

from brorl.benchmarks.records import dumps_record, read_records

IMAGE_TAG = "<image>"  # OpenRLHF turns a prompt containing it into a multimodal message (prompts_dataset.py)


class TrainDataError(ValueError):
    """A train mix OpenRLHF would misread."""


def openrlhf_rows(
    records: list[dict], prompt_tokens: Callable[[str], int] | None = None, prompt_max_len: int | None = None
) -> tuple[list[dict], list[str]]:
    """(rows for OpenRLHF, ids of records left out as too long). `prompt_tokens` counts a prompt's tokens with the
    chat template applied; without it no prompt is left out."""
    tagged = [r["id"] for r in records if IMAGE_TAG in r["prompt"]]
    if tagged:
        raise TrainDataError(
            f"{len(tagged)} prompts contain {IMAGE_TAG!r}, which OpenRLHF 0.11.2 turns into an image "
            f"slot of a multimodal message (first ids: {tagged[:5]}); remove them from the mix"
        )
    rows, too_long = [], []
    for record in records:
        if (
            prompt_tokens is not None
            and prompt_max_len is not None
            and prompt_tokens(record["prompt"]) > prompt_max_len
        ):
            too_long.append(record["id"])
            continue
        rows.append({"input": record["prompt"], "label": dumps_record(record)})
    if not rows:
        raise TrainDataError(f"no prompt of the mix fits context.prompt_max_len = {prompt_max_len} tokens")
    return rows, too_long


def passes_needed(prompts_needed: float, usable: int) -> int:
    """Passes over `usable` prompts that hold `prompts_needed` (at least one)."""
    return max(1, math.ceil(prompts_needed / usable))


def shuffled_passes(rows: list[dict], passes: int, seed: int) -> list[dict]:
    """`passes` copies of rows, each in its own order from random.Random((seed, pass)) (stable across Pythons)."""
    order = []
    for index in range(passes):
        copy = list(rows)
        random.Random(f"{seed}/{index}").shuffle(copy)
        order += copy
    return order


def write_openrlhf_dataset(
    train_mix: Path,
    out: Path,
    prompt_tokens: Callable[[str], int] | None = None,
    prompt_max_len: int | None = None,
    *,
    prompts_needed: float = 0,
    seed: int = 0,
) -> dict:
    """Convert `train_mix` into `out` (atomically), enough shuffled passes for `prompts_needed` prompts; returns a
    summary (counts, passes and the left-out ids)."""
    records = read_records(train_mix)
    rows, too_long = openrlhf_rows(records, prompt_tokens, prompt_max_len)
    passes = passes_needed(prompts_needed, len(rows))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for row in shuffled_passes(rows, passes, seed):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(out)
    scorers = sorted({json.loads(row["label"])["scorer"] for row in rows})
    return {
        "source": str(train_mix),
        "records": len(records),
        "written": len(rows),
        "passes": passes,
        "scorers": scorers,
        "prompts": passes * len(rows),
        "seed": seed,
        "too_long": len(too_long),
        "too_long_ids": too_long,
        "prompt_max_len": prompt_max_len,
    }


def chat_prompt_tokens(model_dir: Path) -> Callable[[str], int]:
    """Token count of a prompt as OpenRLHF builds it: the model's chat template with the generation prompt."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))

    def count(prompt: str) -> int:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def stop_ids(model_dir: Path, tokenizer) -> list[int]:
    """The token ids vLLM stops on and keeps at the end of a response: the tokenizer's EOS and every `eos_token_id`
    of the model's generation_config.json (vLLM 0.29 adds those to each request's stop ids)."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    config = Path(model_dir) / "generation_config.json"
    if config.is_file():
        eos = json.loads(config.read_text()).get("eos_token_id")
        ids |= set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    return sorted(int(i) for i in ids)


def reward_text(model_dir: Path) -> dict:
    """What the reward needs to know of the model's tokenizer (brorl.scoring.reasoning): the special tokens
    (EOS, padding, ...) and the text of every stop id vLLM uses, which OpenRLHF's decode can leave at the end of a
    response (a response without one at its end counts as cut at the budget), never the reasoning tags, which the
    verifiers read; and whether the chat template opens <think> in the generation prompt. ValueError when a stop id's
    text cannot be told apart (empty or whitespace, or a reasoning tag): the truncation rule would misjudge
    responses."""
    from transformers import AutoTokenizer

    from brorl.scoring.reasoning import CLOSE, OPEN, template_opens_reasoning

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    stops = {i: tokenizer.decode([i], skip_special_tokens=False) for i in stop_ids(model_dir, tokenizer)}
    unusable = {i: t for i, t in stops.items() if not t.strip() or t in (OPEN, CLOSE)}
    if unusable:
        raise ValueError(
            f"{model_dir}: vLLM stops on token id(s) {sorted(unusable)} whose text {list(unusable.values())} the "
            "reward cannot find at the end of a response (generation_config.json eos_token_id): a response that "
            "stopped on one would count as cut at the budget"
        )
    tokens = set(tokenizer.all_special_tokens) | set(stops.values())
    return {
        "special_tokens": sorted(t for t in tokens if t not in (OPEN, CLOSE)),
        "stop_tokens": sorted(set(stops.values())),
        "template_opens_reasoning": template_opens_reasoning(tokenizer),
    }
