"""The training reward (OpenRLHF's `reward_func` interface and the embedded engine's `score_rollouts`): right,
wrong, truncated, empty and hostile responses; it never raises."""

from __future__ import annotations

import json

import pytest
import torch
from brorl.benchmarks.synthetic import sums
from brorl.training.reward import parse_label, response_of, reward_func, score_rollouts

ITEM = sums(1, seed=3)[0]  # "Compute a + b. ..." with its integer answer
PROMPT = "<|im_start|>user\n" + ITEM["prompt"] + "<|im_end|>\n<|im_start|>assistant\n"
CODE_ITEM = {
    "id": "code/0",
    "benchmark": "apps",
    "family": "code",
    "prompt": "Read n, print n*2.",
    "scorer": "code",
    "tests": {"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]},
    "metadata": {},
}


def call(responses: list[str], labels: list) -> dict:
    return reward_func([PROMPT + r for r in responses], [PROMPT] * len(responses), labels)


def test_right_wrong_truncated_empty():
    answer = ITEM["answer"]
    responses = [
        f"\\boxed{{{answer}}}",
        f"<think>easy</think> \\boxed{{{answer}}}",
        "\\boxed{999}",
        f"<think>still thinking \\boxed{{{answer}}}",
        "",
    ]
    out = call(responses, [json.dumps(ITEM)] * len(responses))
    assert out["rewards"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert out["scores"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert out["rewards"].dtype == torch.float32 and out["rewards"].shape == (5,)
    assert float(out["extra_logs"]["bad_labels"]) == 0.0


def test_labels_as_dicts_and_bad_labels_never_raise():
    out = call(["\\boxed{1}", "\\boxed{1}", "\\boxed{1}", "x"], [ITEM, "not json", None, json.dumps({"id": 1})])
    assert out["rewards"].shape == (4,)
    assert out["rewards"][1:].tolist() == [0.0, 0.0, 0.0]
    assert float(out["extra_logs"]["bad_labels"]) == 3.0
    with pytest.raises(ValueError, match="scorer"):
        parse_label('{"id": 1}')


def test_hostile_responses_score_zero_without_raising():
    hostile = [
        "\\boxed{" * 5000,
        "\x00\xff" * 1000,
        "}" * 10_000 + "\\boxed{}",
        "\\boxed{\\frac{1}{0}}",
        "\\boxed{" + "9" * 5000 + "}",
    ]
    out = call(hostile, [ITEM] * len(hostile))
    assert out["rewards"].tolist() == [0.0] * len(hostile)


def test_code_reward_is_partial_credit_and_binary_score_needs_all_tests():
    half = "```python\nn = int(input())\nprint(4 if n == 2 else 0)\n```"
    full = "```python\nprint(int(input()) * 2)\n```"
    loop = "```python\nwhile True:\n    pass\n```"
    # the time limit is wall-clock over all tests of a program: generous for the programs that finish (a loaded
    # machine must not turn a right answer into a timeout), short for the loop that never does
    scores = score_rollouts([CODE_ITEM] * 2, [half, full], code_reward="fraction", code_timeout_s=30.0)
    assert [s.score for s in scores] == [0.5, 1.0]
    assert [s.correct for s in scores] == [False, True]
    (looped,) = score_rollouts([CODE_ITEM], [loop], code_reward="fraction", code_timeout_s=1.0)
    assert (looped.score, looped.correct) == (0.0, False)
    assert looped.error == "timeout"  # the infinite loop is recorded, not raised


def test_response_of_strips_the_prompt():
    assert response_of(PROMPT + "abc", PROMPT) == "abc"
    assert response_of("other text", PROMPT) == "other text"


IF_ITEM = {
    "id": "if/1",
    "benchmark": "if",
    "family": "instruction_following",
    "prompt": "Describe a lamp.",
    "scorer": "instruction_following",
    "metadata": {
        "problem": "Describe a lamp.",
        "instruction_id_list": ["startend:end_checker"],
        "kwargs": [{"end_phrase": "Any other questions?"}],
    },
}


def test_the_cluster_reward_scores_the_text_openrlhfs_decode_path_gives_it(tmp_path, monkeypatch):
    """OpenRLHF 0.11.2's SingleTurnExecutor: prompt ids (no special tokens added) + the generated ids, decoded with
    skip_special_tokens=False, so a response that stopped on EOS ends in the EOS string; with an R1-style template
    the prompt opened <think>. The reward strips the EOS (the launcher's token list, from the model folder) and
    scores the reasoning as opened by the template."""
    import brorl.training.reward as reward
    from brorl.training.openrlhf.dataset import reward_text
    from helpers import r1_style_tokenizer

    r1_style_tokenizer().save_pretrained(tmp_path / "model")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tmp_path / "model")  # the tokenizer OpenRLHF loads from the model folder
    text = reward_text(tmp_path / "model")  # what the segment runner hands the launcher
    assert text["template_opens_reasoning"]
    monkeypatch.setattr(reward, "SPECIAL_TOKENS", tuple(text["special_tokens"]))
    assert "<｜end▁of▁sentence｜>" in reward.SPECIAL_TOKENS and "<think>" not in reward.SPECIAL_TOKENS

    def sample(item: dict, response: str, stopped_on_eos: bool = True, keep_prompt_tokens: int | None = None):
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": item["prompt"]}], tokenize=False, add_generation_prompt=True
        )
        prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        if keep_prompt_tokens:  # OpenRLHF cuts a prompt too long for max_len from the left
            prompt_ids = prompt_ids[-keep_prompt_tokens:]
        ids = prompt_ids + tok(response, add_special_tokens=False)["input_ids"]
        query = tok.decode(ids + ([tok.eos_token_id] if stopped_on_eos else []), skip_special_tokens=False)
        return query, prompt, json.dumps(item)

    answer = ITEM["answer"]
    cases = [
        sample(IF_ITEM, "plan</think>It glows. Any other questions?"),  # ends with the phrase, then EOS
        sample(ITEM, f"a + b</think> \\boxed{{{answer}}}"),
        sample(ITEM, f"maybe \\boxed{{{answer}}} but wait", stopped_on_eos=False),  # cut off inside the reasoning
        sample(ITEM, f"a + b</think> \\boxed{{{answer}}}", keep_prompt_tokens=40),  # the decoded prompt differs
    ]
    queries, prompts, labels = map(list, zip(*cases))
    assert queries[0].endswith("<｜end▁of▁sentence｜>") and not queries[3].startswith(prompts[3])
    out = reward.reward_func(queries, prompts, labels)
    assert out["rewards"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert reward.response_of(queries[0], prompts[0]) == "<think>plan</think>It glows. Any other questions?"

    # a right answer cut at the token budget (no EOS after it): reward 0 under training.reward.truncated zero, and
    # counted as zeroed, not as a verifier error; the verifiers alone would give it 1
    cut = sample(ITEM, f"a + b</think> \\boxed{{{answer}}}", stopped_on_eos=False)
    assert not reward.stopped_properly(cut[0], cut[1]) and reward.stopped_properly(queries[1], prompts[1])
    monkeypatch.setattr(reward, "TRUNCATED_REWARD", "zero")
    zeroed = reward.reward_func([cut[0], queries[1]], [cut[1], prompts[1]], [cut[2], labels[1]])
    assert zeroed["rewards"].tolist() == [0.0, 1.0] and zeroed["scores"].tolist() == [0.0, 1.0]
    assert zeroed["extra_logs"]["truncated_zeroed"].item() == 0.5
    assert zeroed["extra_logs"]["verifier_errors"].item() == 0.0
    monkeypatch.setattr(reward, "TRUNCATED_REWARD", "verifier")
    assert reward.reward_func([cut[0]], [cut[1]], [cut[2]])["rewards"].tolist() == [1.0]


def test_truncated_responses_score_zero_without_a_verifier_call_only_under_the_zero_rule():
    from brorl.scoring.result import TRUNCATED

    answer = ITEM["answer"]
    right = f"<think>a + b</think> \\boxed{{{answer}}}"
    # the code item would run its program; cut, it is never run (its error is the rule's, not the sandbox's)
    items, responses = [ITEM, ITEM, CODE_ITEM], [right, right, "```python\nprint(int(input())*2)\n```"]
    zero = score_rollouts(items, responses, truncated=[True, False, True], truncated_reward="zero", workers=1)
    assert [s.score for s in zero] == [0.0, 1.0, 0.0] and [s.error for s in zero] == [TRUNCATED, None, TRUNCATED]
    kept = score_rollouts(items, responses, truncated=[True, False, True], truncated_reward="verifier", workers=1)
    assert [s.score for s in kept] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="training.reward.truncated must be one of"):
        score_rollouts(items, responses, truncated=[False] * 3, truncated_reward="half")
    with pytest.raises(ValueError, match="3 items but 2 truncation flags"):
        score_rollouts(items, responses, truncated=[True, True], truncated_reward="zero")


@pytest.mark.parametrize("rule", ["zero", "verifier"])
def test_the_embedded_engine_applies_the_truncation_rule_from_vllms_finish_reason(rule, tmp_path):
    """EmbeddedRun._generate with a stand-in for vLLM (the model is not what is tested): every group holds two right
    answers that stopped and two that hit the budget. Zeroed, the group has signal and is kept with rewards 1,1,0,0;
    scored by the verifier, all four are right and dynamic sampling drops it."""
    from types import SimpleNamespace

    from brorl.config import load_yaml_config
    from brorl.training.embedded.rollout import Rollout
    from brorl.training.embedded.run import EmbeddedRun
    from brorl.training.recipe import arm_plan
    from helpers import CONFIG, TINY

    config = load_yaml_config(CONFIG, TINY)
    config["training"]["reward"]["truncated"] = rule
    config["training"]["dynamic_sampling"]["max_rounds"] = 1
    plan = arm_plan(config, "prorl_n4")
    right = f"<think>a + b</think> \\boxed{{{ITEM['answer']}}}"

    def sample(prompts, n, *args, **kwargs):
        return [
            [Rollout([1], [2, 3], [-0.1, -0.1], right, reason) for reason in ("stop", "stop", "length", "length")]
            for _ in prompts
        ]

    run = EmbeddedRun(config, plan, tmp_path / "start", tmp_path / "mix.jsonl", tmp_path / "out", progress=False)
    run.engine = SimpleNamespace(sample=sample, engine=SimpleNamespace(reasoning_opened=False))
    run.stream = SimpleNamespace(take=lambda k: [ITEM] * k)
    try:
        out = run._generate(step=1)
    finally:
        if run._pool is not None:
            run._pool.close()
    assert out.generated_samples == 4 * plan.prompts_per_step and out.truncated == 2 * plan.prompts_per_step
    assert out.reward_errors == 0  # zeroed responses are not verifier errors
    if rule == "zero":
        assert len(out.groups) == plan.prompts_per_step
        assert all(list(r) == [1.0, 1.0, 0.0, 0.0] for r in out.rewards)
    else:
        assert out.groups == [] and out.reward_sum == out.generated_samples


def test_the_reward_knows_every_stop_id_vllm_uses_and_refuses_one_it_cannot_see(tmp_path):
    """vLLM stops on the tokenizer's EOS and on every eos_token_id of generation_config.json, and keeps the id at
    the end of the response: each one's text joins the tokens the reward strips and reads as "stopped"; a stop id
    whose text is empty or a reasoning tag is refused before any launch."""
    from brorl.models.tiny import build_tiny_model
    from brorl.training.openrlhf.dataset import reward_text
    from transformers import AutoTokenizer

    model = build_tiny_model(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(model)
    bang = tok("!", add_special_tokens=False)["input_ids"][0]  # a stop id that is no special token
    config = json.loads((model / "generation_config.json").read_text())
    (model / "generation_config.json").write_text(json.dumps({**config, "eos_token_id": [tok.eos_token_id, bang]}))
    text = reward_text(model)
    assert text["stop_tokens"] == sorted(["<|im_end|>", "!"]) and "!" in text["special_tokens"]
    assert "!" not in tok.all_special_tokens  # only the generation config names it
    space = tok(" ", add_special_tokens=False)["input_ids"][0]  # whitespace: not told apart from the text's own
    (model / "generation_config.json").write_text(json.dumps({**config, "eos_token_id": [tok.eos_token_id, space]}))
    with pytest.raises(ValueError, match=rf"stops on token id\(s\) \[{space}\]"):
        reward_text(model)
