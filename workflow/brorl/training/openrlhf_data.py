"""Train mix (benchmark records, jsonl) -> OpenRLHF's prompt dataset: one `{"input": prompt, "label": record JSON}`
per line, read with `--data.input_key input --data.label_key label --data.apply_chat_template`.

OpenRLHF hands `label` verbatim to `reward_func`, which parses the record back (brorl.training.reward.parse_label).
Prompts longer than context.prompt_max_len tokens (after the chat template) are left out and listed in the summary,
never dropped silently; OpenRLHF itself would only truncate them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from brorl.benchmarks.records import dumps_record, read_records

IMAGE_TAG = "<image>"  # OpenRLHF turns a prompt containing it into a multimodal message (prompts_dataset.py)


class TrainDataError(ValueError):
    """A train mix OpenRLHF would misread."""


def openrlhf_rows(records: list[dict], prompt_tokens: Callable[[str], int] | None = None,
                  prompt_max_len: int | None = None) -> tuple[list[dict], list[str]]:  # fmt: skip
    """(rows for OpenRLHF, ids of records left out as too long). `prompt_tokens` counts a prompt's tokens with the
    chat template applied; without it no prompt is left out."""
    tagged = [r["id"] for r in records if IMAGE_TAG in r["prompt"]]
    if tagged:
        raise TrainDataError(f"{len(tagged)} prompts contain {IMAGE_TAG!r}, which OpenRLHF 0.11.2 turns into an image "
                             f"slot of a multimodal message (first ids: {tagged[:5]}); remove them from the mix")  # fmt: skip
    rows, too_long = [], []
    for record in records:
        if prompt_tokens is not None and prompt_max_len is not None and prompt_tokens(record["prompt"]) > prompt_max_len:
            too_long.append(record["id"])
            continue
        rows.append({"input": record["prompt"], "label": dumps_record(record)})
    if not rows:
        raise TrainDataError(f"no prompt of the mix fits context.prompt_max_len = {prompt_max_len} tokens")
    return rows, too_long


def write_openrlhf_dataset(train_mix: Path, out: Path, prompt_tokens: Callable[[str], int] | None = None,
                           prompt_max_len: int | None = None) -> dict:  # fmt: skip
    """Convert `train_mix` into `out` (atomically); returns a summary (counts and the left-out ids)."""
    records = read_records(train_mix)
    rows, too_long = openrlhf_rows(records, prompt_tokens, prompt_max_len)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(out)
    return {"source": str(train_mix), "records": len(records), "written": len(rows),
            "too_long": len(too_long), "too_long_ids": too_long, "prompt_max_len": prompt_max_len}  # fmt: skip


def chat_prompt_tokens(model_dir: Path) -> Callable[[str], int]:
    """Token count of a prompt as OpenRLHF builds it: the model's chat template with the generation prompt."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))

    def count(prompt: str) -> int:
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                             add_generation_prompt=True)  # fmt: skip
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count
