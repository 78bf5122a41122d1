"""Every number the README and docs quote from `make plan`, as the words around it with the number as a placeholder.

Each quote is formatted with the plan of the shipped preset it names (`python -m brorl.ops.plan --json` of that preset,
run once per preset by tests/plan/test_plan.py) and must appear on its page, whitespace folded: a quoted number that
drifts from the plan's output, or a sentence reworded without this list, fails the test. The placeholders are the
fields of `plan_values` (tests/plan/test_plan.py): `{paper.gpu_hours:,.0f}` is the paper plan's total GPU-hours.
"""

from __future__ import annotations

# (page, quote); the presets: paper (config.yaml), one_node, released, smoke (gpu_smoke), step16k (step_16k), decision,
# probe (the paper config with probe.enabled, priced by brorl.ops.plan.pricing.probe_price: the probe is off in every shipped preset), seg (the
# longest training job of an arm priced by the plan's step model, as its walltime check does)
QUOTES: list[tuple[str, str]] = [
    # the README's price table
    (
        "README.md",
        "| the paper (`config.yaml`) | {paper.jobs:,} | {paper.gpu_hours:,.0f} | {paper.days:.1f} days on 8 GPU nodes "
        "| {paper.settles} (power {paper.power}) |",
    ),
    (
        "README.md",
        "(`workflow/presets/one_node.yaml`) | {one_node.jobs:,} | {one_node.gpu_hours:,.0f} | {one_node.days:.1f} days "
        "on the node | {one_node.settles} (power {one_node.power}) |",
    ),
    (
        "README.md",
        "(`workflow/presets/decision.yaml`) | {decision.jobs:,} | {decision.gpu_hours:,.0f} | {decision.days:.1f} days "
        "on the node | two necessary conditions, yes; the headline, {decision.settles} |",
    ),
    (
        "README.md",
        "(`workflow/presets/released.yaml`) | {released.jobs:,} | {released.gpu_hours:,.1f} | {released.wall_h:.1f} h on 8 GPU nodes |",
    ),
    (
        "README.md",
        "(`workflow/presets/gpu_smoke.yaml`) | {smoke.jobs:,} | {smoke.gpu_hours:,.1f} | {smoke.wall_h:.1f} h on the node |",
    ),
    # the runbook's price table and its sections
    (
        "docs/cluster.md",
        "| `make plan` | {paper.jobs:,} | {paper.gpu_hours:,.0f} | {paper.days:.1f} days on 8 GPU nodes |",
    ),
    (
        "docs/cluster.md",
        '/one_node.yaml"` | {one_node.jobs:,} | {one_node.gpu_hours:,.0f} | {one_node.days:.1f} days on the node |',
    ),
    (
        "docs/cluster.md",
        '/released.yaml"` | {released.jobs:,} | {released.gpu_hours:,.1f} | {released.wall_h:.1f} h on 8 GPU nodes |',
    ),
    (
        "docs/cluster.md",
        '/gpu_smoke.yaml"` | {smoke.jobs:,} | {smoke.gpu_hours:,.1f} | {smoke.wall_h:.1f} h on the node |',
    ),
    (
        "docs/cluster.md",
        "({released.jobs:,} jobs, {released.gpu_hours:,.1f} GPU-hours by the plan's priors, {released.wall_h:.1f} h on 8 GPU nodes)",
    ),
    (
        "docs/cluster.md",
        "The plan prices it at {smoke.jobs:,} jobs, {smoke.gpu_hours:,.1f} GPU-hours and {smoke.wall_h:.1f} h of wall "
        "time on the node (training {smoke.training_h:.1f} h",
    ),
    (
        "docs/cluster.md",
        "The plan prices it at {step16k.jobs:,} jobs and {step16k.gpu_hours:,.1f} GPU-hours ({step16k.training_h:.1f} h "
        "of training on the 8 nodes, the step model's estimate)",
    ),
    ("docs/cluster.md", "(saved steps and segment ends, {paper.export_gb:.2f} GB each)"),
    ("docs/cluster.md", "(`training.cluster.keep_checkpoints`, {paper.state_gb:.1f} GB each)"),
    ("docs/cluster.md", "ProRL about {paper.disk[prorl_n16]:,.0f} GB, BroRL about {paper.disk[brorl_n512]:,.0f} GB."),
    ("docs/cluster.md", "(a {paper.state_gb:.1f} GB write per step)"),
    ("docs/cluster.md", "The driver runs for the whole reproduction ({paper.days:.1f} days by the plan)"),
    (
        "docs/cluster.md",
        "for the paper, {paper.sbatch:,} sbatch calls (first attempts) for {paper.jobs:,} jobs, of which "
        "{paper.on_driver} run on the driver and {paper.in_groups} ride in another job's submission.",
    ),
    ("docs/cluster.md", "holds the benchmark's scoring and its summary (`group: scoring`): {paper.in_groups} fewer"),
    ("docs/cluster.md", "in jobs of {seg.steps[one_node]} steps (about {seg.hours[one_node]:.0f} h each on the node"),
    # design notes: the exports, the segment table's job counts, the evaluation cost model
    ("docs/design.md", "(the HF exports of {paper.export_gb:.2f} GB each by the plan's estimate;"),
    (
        "docs/design.md",
        "| ProRL (8,192 samples/step) | {seg.steps[prorl_n16]} | {seg.hours[prorl_n16]:.1f} | "
        "{paper.train_jobs[prorl_n16]} |",
    ),
    (
        "docs/design.md",
        "| BroRL and the arms of 65,536 samples/step | {seg.steps[brorl_n512]} | {seg.hours[brorl_n512]:.1f} | "
        "{paper.train_jobs[brorl_n512]} |",
    ),
    (
        "docs/design.md",
        "| `sweep_n1024` (131,072 samples/step, `n_sweep_prompts.yaml`) | {seg.steps[sweep_n1024]} | {seg.hours[sweep_n1024]:.1f} | "
        "{seg.jobs[sweep_n1024]} |",
    ),
    (
        "docs/design.md",
        "| {seg.steps[one_node]} | {seg.hours[one_node]:.1f} | {one_node.train_jobs[prorl_n16]} per arm |",
    ),
    ("docs/design.md", "(the 21 benchmarks' {paper.problems:,} problems)"),
    (
        "docs/design.md",
        "({paper.checkpoints} checkpoints x 21 benchmarks = {paper.eval_jobs:,} jobs, {paper.samples_m:.2f} M samples, "
        "{paper.tokens_b:.1f} B tokens)",
    ),
    ("docs/design.md", "x {paper.eval_jobs:,} jobs | {paper.eval_old:,.0f} |"),
    ("docs/design.md", "per GPU / 3,600 | {paper.eval_generation:,.0f} |"),
    ("docs/design.md", "start-up | {paper.eval_node_per_job:,.0f} |"),
    ("docs/design.md", "(the 21 benchmarks' sizes) | {paper.eval_sized:,.0f} |"),
    # the evaluation-only route in the stages page
    ("docs/stages.md", "# {released.jobs:,} jobs, {released.gpu_hours:,.1f} GPU-hours (priors)"),
    (
        "docs/stages.md",
        "({released.jobs:,} jobs; {released.eval_jobs} generation jobs of 1 to 8 GPUs each,",
    ),
    (
        "docs/stages.md",
        "{released.eval_sized:,.1f} GPU-hours of generation, {released.eval_node_per_job:,.1f} had each job a node; "
        "{released.wall_h:.1f} h on 8 GPU nodes)",
    ),
    # the probe's price (probe.enabled over the paper config)
    (
        "docs/stages.md",
        "That is {probe.per_checkpoint:.2f} GPU-hours per checkpoint on {probe.gpus} GPUs by the evaluation model's "
        "priors. Over {probe.checkpoints} checkpoints",
    ),
    ("docs/stages.md", "it comes to {probe.gpu_hours:,.1f} GPU-hours, {probe.share:.1f}% of the run."),
]
