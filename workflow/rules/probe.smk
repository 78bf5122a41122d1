# The mass-balance probe (docs/stages.md#the-mass-balance-probe), on when probe.enabled: a fixed probe set sampled
# like a rollout (training.rollout_temperature and rollout_top_p, context.train_max_len) at the start and at every
# saved step of every enabled arm, scored by the evaluation's verifiers, then per-probe pass rates, the shares that
# fell and rose, a table and a figure. Generation and scoring are the evaluation stage's commands at the probe's
# settings; logic in brorl.probe.
# Targets: results/tables/probe.{md,csv}, results/probe/pass_rates.csv, results/figures/probe{,_arms}.{png,pdf}, or:
#   resources/probes/probe_set.jsonl   results/probe/{arm}/step{step}.{samples,scores}.parquet


rule select_probes:
    """The fixed probe set: probe.problems distinct problems of probe.benchmark, chosen by the start checkpoint's
    pass rate (probe.select start_pass_rate: within probe.pass_rate_band) or the first ones (first).
    """
    input:
        benchmark=f"resources/benchmarks/{PROBE['benchmark']}.jsonl",
        start=probe_start_scores(),
    output:
        PROBE_SET,
    log:
        "results/logs/select_probes/probe_set.log",
    conda:
        "../../envs/score.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        problems=PROBE["problems"],
        by_start=lambda wildcards, input: (
            [
                "--start-scores",
                *input.start,
                "--band",
                *map(str, PROBE["pass_rate_band"]),
            ]
            if input.start
            else []
        ),
    shell:
        """
        python -m brorl.probe select \
            --benchmark {input.benchmark:q} \
            --problems {params.problems} \
            {params.by_start:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule generate_probe:
    """The probe set's samples at one checkpoint (arm, step): probe.samples per probe, sampled like a rollout."""
    input:
        model=probe_model,
        probes=PROBE_SET,
        preflight=eval_preflight_input(),
    output:
        samples=ensure("results/probe/{arm}/step{step}.samples.parquet", non_empty=True),
        sidecar="results/probe/{arm}/step{step}.samples.parquet.json",
    log:
        "results/logs/generate_probe/{arm}/step{step}.log",
    benchmark:
        "results/timings/generate_probe/{arm}/step{step}.tsv"
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: 2
    resources:
        mem_mb=16384,
        runtime=240,
        gpu=PROBE_GPUS,
    params:
        engine=config["engine"],
        n=PROBE["samples"],
        temperature=config["training"]["rollout_temperature"],
        top_p=config["training"]["rollout_top_p"],
        max_tokens=CONTEXT["train_max_len"],
        max_model_len=context_length(CONTEXT["train_max_len"]),
        seed=PROBE["seed"],
        shard_size=EVAL["shard_size"],
        data_parallel=PROBE_GPUS,
    shell:
        """
        python -m brorl.generation generate \
            --model {input.model:q} \
            --benchmark {input.probes:q} \
            --n {params.n} \
            --temperature {params.temperature} \
            --top-p {params.top_p} \
            --max-tokens {params.max_tokens} \
            --max-model-len {params.max_model_len} \
            --seed {params.seed} \
            --shard-size {params.shard_size} \
            --engine {params.engine:q} \
            --data-parallel-size {params.data_parallel} \
            --out {output.samples:q} \
            >{log:q} 2>&1
        """


rule score_probe:
    """Each probe sample scored by its benchmark's verifier."""
    input:
        probes=PROBE_SET,
        samples="results/probe/{arm}/step{step}.samples.parquet",
    output:
        ensure("results/probe/{arm}/step{step}.scores.parquet", non_empty=True),
    log:
        "results/logs/score_probe/{arm}/step{step}.log",
    benchmark:
        "results/timings/score_probe/{arm}/step{step}.tsv"
    conda:
        "../../envs/score.yaml"
    threads: 2
    resources:
        mem_mb=4096,
        runtime=120,
    params:
        n=PROBE["samples"],
        code_timeout_s=EVAL["code"]["timeout_s"],  # the code verifier's limits (evaluation.code)
        code_memory_mb=EVAL["code"]["memory_mb"],
    shell:
        """
        python -m brorl.evaluation score \
            --benchmark {input.probes:q} \
            --samples {input.samples:q} \
            --n {params.n} \
            --workers {threads} \
            --code-timeout-s {params.code_timeout_s} \
            --code-memory-mb {params.code_memory_mb} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule analyse_probe:
    """Per-probe pass rates at every probed checkpoint; per arm and step the mean, the shares that fell and rose
    beyond their noise, the worst drop; the table and the figure."""
    input:
        probes=PROBE_SET,
        scores=probe_scores(),
        metrics=probe_comparison_metrics(),
    output:
        md=report_file(
            "results/tables/probe.md",
            "probe",
            "Probe",
            table="mass-balance probe",
            format="markdown",
        ),
        csv=report_file(
            "results/tables/probe.csv",
            "probe",
            "Probe",
            table="mass-balance probe",
            format="csv",
        ),
        rates="results/probe/pass_rates.csv",
        png=report_file(
            "results/figures/probe.png",
            "probe",
            "Probe",
            figure="mass-balance probe",
            format="PNG",
        ),
        pdf="results/figures/probe.pdf",
        arms_png=report_file(
            "results/figures/probe_arms.png",
            "probe",
            "Probe",
            figure="mass-balance probe per arm",
            format="PNG",
        ),
        arms_pdf="results/figures/probe_arms.pdf",
        arms_md=report_file(
            "results/tables/probe_between_arms.md",
            "probe",
            "Probe",
            table="mass-balance probe between arms",
            format="markdown",
        ),
        arms_csv="results/tables/probe_between_arms.csv",
    log:
        "results/logs/analyse_probe/probe.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        samples=PROBE["samples"],
        start_step=config["base_model"]["start_step"],
        z=PROBE["noise_z"],
        engine=config["engine"],
        labels=probe_labels(),
        control=config["analysis"]["comparison"]["control"],
        treatment=config["analysis"]["comparison"]["treatment"],
        target_hours=probe_target_hours(),
        resamples=config["analysis"]["bootstrap"]["resamples"],
        seed=config["analysis"]["bootstrap"]["seed"],
    shell:
        """
        python -m brorl.probe analyse \
            --probes {input.probes:q} \
            --scores {input.scores:q} \
            --samples {params.samples} \
            --start-step {params.start_step} \
            --z {params.z} \
            --engine {params.engine:q} \
            --labels {params.labels:q} \
            --out-rates {output.rates:q} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            --png {output.png:q} \
            --pdf {output.pdf:q} \
            --arms-png {output.arms_png:q} \
            --arms-pdf {output.arms_pdf:q} \
            --control {params.control:q} \
            --treatment {params.treatment:q} \
            --metrics {input.metrics:q} \
            {params.target_hours:q} \
            --resamples {params.resamples} \
            --seed {params.seed} \
            --out-arms-md {output.arms_md:q} \
            --out-arms-csv {output.arms_csv:q} \
            >{log:q} 2>&1
        """


# The in-batch probe (docs/stages.md#the-in-batch-probe), on when probe.in_batch.steps lists steps: each probed
# step's own prompts, from the run folder's step record, sampled just before the step's update and just after it,
# by the probe's own generation and scoring (the rules above, at these files).
# Targets: results/tables/probe_in_batch{,_between_arms}.{md,csv}, results/figures/probe_in_batch.{png,pdf}, or:
#   results/probe/in_batch/{arm}/step{step}.{prompts.jsonl,rollouts.csv,before.scores.parquet,after.scores.parquet}


rule in_batch_prompts:
    """A probed step's own prompts as train-mix records (the updated ones first, probe.in_batch.prompts at most),
    with how many of their rollouts were correct at the step."""
    input:
        manifest=segment_of_step,
        data=TRAIN_MIX,
    output:
        prompts=f"{IN_BATCH_DIR}.prompts.jsonl",
        rollouts=f"{IN_BATCH_DIR}.rollouts.csv",
    log:
        "results/logs/in_batch_prompts/{arm}/step{step}.log",
    wildcard_constraints:
        step=r"\d+",
    conda:
        "../../envs/score.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        step_prompts=lambda wildcards: f"results/train/{wildcards.arm}/run/step_prompts.jsonl",
        prompts=PROBE["in_batch"]["prompts"],
    shell:
        """
        python -m brorl.probe in-batch-prompts \
            --step-prompts {params.step_prompts:q} \
            --train-data {input.data:q} \
            --step {wildcards.step} \
            --prompts {params.prompts} \
            --out {output.prompts:q} \
            --out-rollouts {output.rollouts:q} \
            >{log:q} 2>&1
        """


use rule generate_probe as generate_in_batch with:
    input:
        model=in_batch_model,
        probes=f"{IN_BATCH_DIR}.prompts.jsonl",
        preflight=eval_preflight_input(),
    output:
        samples=ensure(f"{IN_BATCH_DIR}.{{side}}.samples.parquet", non_empty=True),
        sidecar=f"{IN_BATCH_DIR}.{{side}}.samples.parquet.json",
    log:
        "results/logs/generate_in_batch/{arm}/step{step}.{side}.log",
    benchmark:
        "results/timings/generate_in_batch/{arm}/step{step}.{side}.tsv"
    wildcard_constraints:
        step=r"\d+",
        side="before|after",


use rule score_probe as score_in_batch with:
    input:
        probes=f"{IN_BATCH_DIR}.prompts.jsonl",
        samples=f"{IN_BATCH_DIR}.{{side}}.samples.parquet",
    output:
        ensure(f"{IN_BATCH_DIR}.{{side}}.scores.parquet", non_empty=True),
    log:
        "results/logs/score_in_batch/{arm}/step{step}.{side}.log",
    benchmark:
        "results/timings/score_in_batch/{arm}/step{step}.{side}.tsv"
    wildcard_constraints:
        step=r"\d+",
        side="before|after",


rule analyse_in_batch:
    """Per arm and probed step the before/after pass rates of the step's prompts, the share of its updated prompts
    that fell against no change, the test between the arms, the table and the figure."""
    input:
        scores=in_batch_files(".before.scores.parquet", ".after.scores.parquet"),
        prompts=in_batch_files(".prompts.jsonl", ".rollouts.csv"),
    output:
        md=report_file(
            "results/tables/probe_in_batch.md",
            "probe",
            "Probe",
            table="in-batch probe",
            format="markdown",
        ),
        csv="results/tables/probe_in_batch.csv",
        arms_md=report_file(
            "results/tables/probe_in_batch_between_arms.md",
            "probe",
            "Probe",
            table="in-batch probe between arms",
            format="markdown",
        ),
        arms_csv="results/tables/probe_in_batch_between_arms.csv",
        rates="results/probe/in_batch/pass_rates.csv",
        png=report_file(
            "results/figures/probe_in_batch.png",
            "probe",
            "Probe",
            figure="in-batch probe",
            format="PNG",
        ),
        pdf="results/figures/probe_in_batch.pdf",
    log:
        "results/logs/analyse_probe/in_batch.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        samples=PROBE["samples"],
        z=PROBE["noise_z"],
        engine=config["engine"],
        labels=probe_labels(),
        control=config["analysis"]["comparison"]["control"],
        treatment=config["analysis"]["comparison"]["treatment"],
        seed=config["analysis"]["bootstrap"]["seed"],
    shell:
        """
        python -m brorl.probe in-batch \
            --scores {input.scores:q} \
            --samples {params.samples} \
            --z {params.z} \
            --engine {params.engine:q} \
            --labels {params.labels:q} \
            --control {params.control:q} \
            --treatment {params.treatment:q} \
            --seed {params.seed} \
            --out-rates {output.rates:q} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            --out-arms-md {output.arms_md:q} \
            --out-arms-csv {output.arms_csv:q} \
            --png {output.png:q} \
            --pdf {output.pdf:q} \
            >{log:q} 2>&1
        """
