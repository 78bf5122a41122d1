"""The tiny experiment resolves something: RL training through the real rules (warm start, embedded trainer, vLLM
generation, the math verifier, the analysis stage) improves the tiny start model on the trained task, by the
paper's paired one-tailed test at alpha 0.05. A sign error in the advantages or the loss makes the delta negative
and fails this test; so does a trainer that does not move the model.

The run is the demo's own configuration (workflow/presets/tiny.yaml) restricted to what the question needs: the
trained task's benchmark, the arm below (its report steps as the demo's), no throughput or simulation stage; it
ends with the SUMMARY.md the demo writes, whose verdict is checked too."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers import TINY, copy_workflow, output_of, snakemake, write_yaml

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
        },
    )
    work = tmp_path / "work"
    args = ("results/SUMMARY.md", "--cores", "2", "--directory", work, "--configfile", TINY, override)
    proc = snakemake(*args, cwd=repo, timeout=1500)
    assert proc.returncode == 0, output_of(proc)[-6000:]

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
    assert f"`{ARM}` step {final} vs start" in section and "**resolved: training improved the start model**" in section
