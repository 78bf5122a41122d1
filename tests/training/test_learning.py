"""The tiny experiment resolves something: RL training through the real rules (warm start, embedded trainer, vLLM
generation, the math verifier, the analysis stage) improves the tiny start model on the trained task, by the
paper's paired one-tailed test at alpha 0.05. A sign error in the advantages or the loss makes the delta negative
and fails this test; so does a trainer that does not move the model.

The run is the demo's own configuration (workflow/presets/tiny.yaml) restricted to what the question needs: the
trained task's benchmark, the arm below (its report steps as the demo's), no throughput or simulation stage; it
ends with the SUMMARY.md the demo writes, whose verdict is checked too.

The same run draws the mass-balance probe (brorl.probe) at the start and at the arm's final step, and the in-batch
probe of step 1 (the step's own prompts, as the trainer recorded them, at the start and at step 1's export); both
probes' pass rates are checked against a direct computation on the same checkpoints: the prompts sampled again with
transformers' own generate (the chat template applied the same way, the rollout temperature and top-p, no top-k) and
scored by the same verifier, independently of vLLM and of the probe's rules.

It runs with the demo's own profile (profiles/local: two generation jobs side by side) and saves only the steps it
reads (training.checkpoint_every 16: saves do not change the weights), which keeps it within the time it took before
the in-batch probe joined."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import TINY, copy_workflow, output_of, snakemake, write_yaml
from import_oracle import FOLDER_ENV, audited, outside_closure

ARM = "prorl_n4"  # the arm whose learning effect this test asserts (the demo trains both)


@pytest.mark.slow
@pytest.mark.workflow
@pytest.mark.engine
def test_rl_training_improves_the_tiny_start_model_by_the_papers_paired_test(tmp_path):
    repo = copy_workflow(tmp_path / "repo")
    tiny = yaml.safe_load(TINY.read_text())
    arms = [dict(a, enabled=a["name"] == ARM) for a in tiny["arms"]]
    override = write_yaml(
        tmp_path / "learning.yaml",
        {
            "arms": arms,
            "evaluation": {"benchmarks": ["synthetic_sums"]},
            "analysis": {"n_sweep": {"arms": []}},
            "throughput": {"enabled": False},
            "simulation": {"enabled": False},
            "training": {"checkpoint_every": 16},
        },
    )
    work = tmp_path / "work"
    args = (
        "results/SUMMARY.md",
        "results/tables/probe.csv",
        "results/tables/probe_in_batch.csv",
        "--profile",
        repo / "profiles/local",
        "--cores",
        "2",
        "--directory",
        work,
        "--configfile",
        TINY,
        override,
    )
    audit = tmp_path / "audit"  # what each job imported and opened: the rerun derivation's oracle
    proc = snakemake(*args, cwd=repo, timeout=1500, env={FOLDER_ENV: str(audit)})
    assert proc.returncode == 0, output_of(proc)[-6000:]
    assert outside_closure(audit, repo / "workflow") == {}  # every module a job ran is in its rule's rerun trigger
    assert len(audited(audit)) >= 15, sorted(audited(audit))  # training, generation, scoring, probes, analysis

    sig = json.loads((work / "results/stats/significance.json").read_text())
    (row,) = [r for r in sig["learning"] if r["arm"] == ARM]
    final = max(next(a for a in arms if a["name"] == ARM)["report_steps"])
    pooled = row["pooled"]
    print(
        f"\nlearning effect of {ARM} step {row['step']} vs start on synthetic_sums: "
        f"{100 * pooled['baseline_mean']:.2f} -> {100 * pooled['treatment_mean']:.2f} "
        f"(delta {100 * pooled['delta']:+.2f}, 95% CI {100 * pooled['ci_low']:+.2f} .. {100 * pooled['ci_high']:+.2f}), "
        f"t {pooled['t']:.2f}, p {pooled['p']:.3g}, n {pooled['n']}"
    )
    assert row["status"] == "ok" and row["step"] == final, row
    assert pooled["n"] >= 200, pooled  # enough problems for a standard error of about 2 points
    assert pooled["delta"] > 0 and pooled["p"] < 0.05 and row["resolved"], pooled
    summary = (work / "results/SUMMARY.md").read_text()
    section = summary.split("## Does RL training improve the start model?")[1].split("\n## ")[0]
    (line,) = [line for line in section.splitlines() if line.startswith(f"- `{ARM}` step {final} vs start")]
    assert "**resolved: training improved the start model**" in line
    # the README states this arm's verdict in the words SUMMARY.md prints
    assert f"**{readme_verdict(ARM)}**" in line, (readme_verdict(ARM), line)

    # the probe at the start and at the final step: its pass rates against a direct computation
    probe = tiny["probe"]
    rates = pd.read_csv(work / "results/probe/pass_rates.csv")
    assert set(zip(rates["arm"], rates["step"])) == {("base", 0), (ARM, final)}
    trajectory = pd.read_csv(work / "results/tables/probe.csv")
    assert trajectory["probes"].eq(probe["problems"]).all() and trajectory["samples"].eq(probe["samples"]).all()
    items = [json.loads(line) for line in (work / "resources/probes/probe_set.jsonl").read_text().splitlines()]
    sampling = tiny_sampling(tiny)
    start_model = f"resources/models/tiny-qwen2-ctx{sampling['context']}"  # as training starts from it
    for arm, step, model in (("base", 0, start_model), (ARM, final, f"results/train/{ARM}/step{final}")):
        ours = rates[(rates["arm"] == arm) & (rates["step"] == step)].set_index("id").loc[[i["id"] for i in items]]
        direct = direct_pass_rates(work / model, items, probe["samples"], sampling)
        z, mean_z = compare_rates(ours["correct"].to_numpy(), direct, probe["samples"])
        print(
            f"probe of {arm} step {step}: pipeline {ours['pass_rate'].mean():.4f}, direct "
            f"{direct.mean() / probe['samples']:.4f}, mean z {mean_z:+.2f}, max |z| {np.abs(z).max():.2f}"
        )
        assert abs(mean_z) < 3 and np.abs(z).max() < 4.5, (arm, step, z)

    # the in-batch probe of step 1: the step's own prompts as the trainer recorded them, the updated ones first
    (k,) = tiny["probe"]["in_batch"]["steps"]
    recorded = [json.loads(x) for x in (work / f"results/train/{ARM}/run/step_prompts.jsonl").read_text().splitlines()]
    (drawn,) = [r["prompts"] for r in recorded if r["step"] == k]
    updated = [p["id"] for p in drawn if 0 < p["correct"] < p["samples"]]
    folder = work / f"results/probe/in_batch/{ARM}"
    chosen = [json.loads(x) for x in (folder / f"step{k}.prompts.jsonl").read_text().splitlines()]
    expected = (updated + [p["id"] for p in drawn if p["id"] not in updated])[: tiny["probe"]["in_batch"]["prompts"]]
    assert [i["id"] for i in chosen] == expected and updated, (chosen, drawn)
    in_batch = pd.read_csv(work / "results/probe/in_batch/pass_rates.csv")
    row = pd.read_csv(work / "results/tables/probe_in_batch.csv").iloc[0]
    assert (row["arm"], row["step"], row["prompts"], row["updated"]) == (
        ARM,
        k,
        len(chosen),
        min(len(updated), len(chosen)),
    )
    for side, model in (("before", start_model), ("after", f"results/train/{ARM}/step{k}")):
        ours = in_batch[in_batch["side"] == side].set_index("id").loc[expected]
        assert row[side] == pytest.approx(ours["pass_rate"].mean())  # the table's mean is the rates'
        direct = direct_pass_rates(work / model, chosen, probe["samples"], sampling)
        z, mean_z = compare_rates(ours["correct"].to_numpy(), direct, probe["samples"])
        print(
            f"in-batch probe of step {k}, {side}: pipeline {ours['pass_rate'].mean():.4f}, direct "
            f"{direct.mean() / probe['samples']:.4f}, mean z {mean_z:+.2f}, max |z| {np.abs(z).max():.2f}"
        )
        assert abs(mean_z) < 3 and np.abs(z).max() < 4.5, (side, z)


def readme_verdict(arm: str) -> str:
    """The verdict words the README states for an arm's learning effect (`arm`'s verdict reads **...**)."""
    readme = " ".join((TINY.parents[2] / "README.md").read_text().split())
    match = re.search(rf"`{arm}`\)? the verdict reads \*\*([^*]+)\*\*", readme)
    assert match, f"README.md states no verdict for {arm}"
    return match[1]


def tiny_sampling(tiny: dict) -> dict:
    """The rollout sampling the probe uses: the preset's, else config.yaml's (the preset inherits the recipe)."""
    base = yaml.safe_load((TINY.parents[2] / "config.yaml").read_text())
    train = {**base["training"], **tiny.get("training", {})}
    context = {**base["context"], **tiny.get("context", {})}
    return {
        "temperature": train["rollout_temperature"],
        "top_p": train["rollout_top_p"],
        "max_tokens": context["train_max_len"],
        "context": context["prompt_max_len"] + context["train_max_len"],
    }


def direct_pass_rates(model: Path, items: list[dict], samples: int, sampling: dict) -> np.ndarray:
    """Correct samples per probe, sampled with transformers' generate and scored by the evaluation's verifier."""
    import torch
    from brorl.evaluation.score import score_samples
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model)
    policy = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
    rows = []
    for item in items:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": item["prompt"]}], tokenize=False, add_generation_prompt=True
        )
        prompt = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            out = policy.generate(
                prompt.repeat(samples, 1),
                attention_mask=torch.ones(samples, prompt.shape[1], dtype=torch.long),
                do_sample=True,
                temperature=sampling["temperature"],
                top_p=sampling["top_p"],
                top_k=0,
                max_new_tokens=sampling["max_tokens"],
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )
        for k, ids in enumerate(out[:, prompt.shape[1] :].tolist()):
            stopped = tokenizer.eos_token_id in ids
            ids = ids[: ids.index(tokenizer.eos_token_id) + 1] if stopped else ids
            rows.append(
                {
                    "id": item["id"],
                    "sample_idx": k,
                    "response": tokenizer.decode(ids, skip_special_tokens=True),
                    "n_tokens": len(ids),
                    "finish_reason": "stop" if stopped else "length",
                }
            )
    scores = score_samples(items, pd.DataFrame(rows), workers=1, progress=False, n=samples, where=str(model))
    return scores.groupby("id", sort=False)["correct"].sum().loc[[i["id"] for i in items]].to_numpy()


def compare_rates(ours: np.ndarray, direct: np.ndarray, samples: int) -> tuple[np.ndarray, float]:
    """Per-probe z of the difference of two independent estimates of the same pass rate, and the z of their means."""
    p1, p2 = ours / samples, direct / samples
    pooled = (ours + direct + 1) / (2 * samples + 2)
    se = np.sqrt(2 * pooled * (1 - pooled) / samples)
    mean_se = np.sqrt(np.sum(se**2)) / len(se)
    return (p1 - p2) / se, float((p1.mean() - p2.mean()) / mean_se)
