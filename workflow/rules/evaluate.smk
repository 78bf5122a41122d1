# Evaluation stage: the paper's protocol (Appendix D; 16 samples, temperature 0.6, top_p 0.95) on each evaluated
# checkpoint x evaluation.benchmarks. Generation and scoring are separate rules, so a verifier change reruns scoring
# only. Logic in brorl.models (tiny model), brorl.generation (samples) and brorl.evaluation (scores, summaries, table).
# Targets: results/tables/eval_summary.{md,csv}, or one file of the grammar:
#   results/eval/{arm}/step{step}/{benchmark}.samples.parquet (+ .json sidecar, + .shards/ kept for resuming)
#   results/eval/{arm}/step{step}/{benchmark}.scores.parquet   results/eval/{arm}/step{step}/{benchmark}.summary.json


rule generate_samples:
    """The samples of one checkpoint (arm, step) on one benchmark: evaluation.n_samples per problem, vLLM. With
    evaluation.one_engine_per_checkpoint (the tiny preset) one job and one engine serve all of a checkpoint's
    benchmarks, writing the same per-benchmark files."""
    input:
        model=evaluation_model,
        benchmark=generation_benchmarks(),
        preflight=eval_preflight_input(),
        registration=decision_input,  # the decision experiment's thresholds first (when it is on)
    output:
        samples=[ensure(p, non_empty=True) for p in generation_files("samples.parquet")],
        sidecar=generation_files("samples.parquet.json"),
    log:
        generation_log("results/logs/generate_samples"),
    benchmark:
        generation_log("results/timings/generate_samples", ".tsv")
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: 2
    resources:
        mem_mb=16384,
        runtime=240,
        gpu=generation_gpus,
    params:
        engine=config["engine"],
        n=samples_of,
        temperature=EVAL["temperature"],
        top_p=EVAL["top_p"],
        max_tokens=EVAL["max_tokens"],
        max_model_len=max_model_len(),
        seed=EVAL["seed"],
        shard_size=EVAL["shard_size"],
        max_items=max_items_flag(),
        data_parallel=data_parallel_size,
    shell:
        """
        python -m brorl.generation generate \
            --model {input.model:q} \
            --benchmark {input.benchmark:q} \
            --n {params.n} \
            --temperature {params.temperature} \
            --top-p {params.top_p} \
            --max-tokens {params.max_tokens} \
            --max-model-len {params.max_model_len} \
            --seed {params.seed} \
            --shard-size {params.shard_size} \
            --engine {params.engine:q} \
            --data-parallel-size {params.data_parallel} \
            {params.max_items:q} \
            --out {output.samples:q} \
            >{log:q} 2>&1
        """


rule score_samples:
    """Each sample scored by its benchmark's verifier (math, code in a sandbox, IFEval, Reasoning Gym)."""
    input:
        benchmark="resources/benchmarks/{benchmark}.jsonl",
        samples="results/eval/{arm}/step{step}/{benchmark}.samples.parquet",
    output:
        ensure(
            "results/eval/{arm}/step{step}/{benchmark}.scores.parquet", non_empty=True
        ),
    log:
        "results/logs/score_samples/{arm}/step{step}/{benchmark}.log",
    benchmark:
        "results/timings/score_samples/{arm}/step{step}/{benchmark}.tsv"
    group:
        SUBMISSION_GROUPS["score_samples"]  # one sbatch for both (brorl.ops.run.submission)
    conda:
        "../../envs/score.yaml"
    threads: 2
    resources:
        mem_mb=4096,
        runtime=120,
    params:
        n=samples_of,
        max_items=max_items_flag(),
        code_timeout_s=EVAL["code"]["timeout_s"],  # the code verifier's limits (evaluation.code)
        code_memory_mb=EVAL["code"]["memory_mb"],
        # model-written code runs under bubblewrap, or not at all unless the config accepts weaker isolation
        unsandboxed="--allow-unsandboxed" if EVAL["allow_unsandboxed_code"] else "",
    shell:
        """
        python -m brorl.evaluation score \
            --benchmark {input.benchmark:q} \
            --samples {input.samples:q} \
            --n {params.n} \
            {params.max_items:q} {params.unsandboxed} \
            --workers {threads} \
            --code-timeout-s {params.code_timeout_s} \
            --code-memory-mb {params.code_memory_mb} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule summarize_evaluation:
    """pass@1 and pass@k of one checkpoint on one benchmark (the protocol of Appendix D)."""
    input:
        benchmark="resources/benchmarks/{benchmark}.jsonl",
        samples="results/eval/{arm}/step{step}/{benchmark}.samples.parquet",
        scores="results/eval/{arm}/step{step}/{benchmark}.scores.parquet",
    output:
        "results/eval/{arm}/step{step}/{benchmark}.summary.json",
    log:
        "results/logs/summarize_evaluation/{arm}/step{step}/{benchmark}.log",
    group:
        SUBMISSION_GROUPS["summarize_evaluation"]  # one sbatch for both (brorl.ops.run.submission)
    conda:
        "../../envs/score.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        n=samples_of,
        max_items=max_items_flag(),
    shell:
        """
        python -m brorl.evaluation summarize \
            --benchmark {input.benchmark:q} \
            --samples {input.samples:q} \
            --scores {input.scores:q} \
            --arm {wildcards.arm:q} \
            --step {wildcards.step} \
            --n {params.n} \
            {params.max_items:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule collect_evaluation:
    """The evaluation table: pass@k (pass@1 with its standard error) per benchmark of every evaluated checkpoint,
    and the math benchmarks' math-verify-only pass@1 beside the ProRL grader's."""
    input:
        summaries=evaluation_files("summary.json"),
    output:
        md=report_file(
            "results/tables/eval_summary.md",
            "eval_summary",
            "Evaluation",
            table="pass@k per benchmark",
            format="markdown",
        ),
        csv=report_file(
            "results/tables/eval_summary.csv",
            "eval_summary",
            "Evaluation",
            table="pass@k per benchmark",
            format="csv",
        ),
        agreement_md=report_file(
            "results/tables/math_verify_agreement.md",
            "math_verify_agreement",
            "Evaluation",
            table="math-verify alone vs the ProRL grader",
            format="markdown",
        ),
        agreement_csv=report_file(
            "results/tables/math_verify_agreement.csv",
            "math_verify_agreement",
            "Evaluation",
            table="math-verify alone vs the ProRL grader",
            format="csv",
        ),
    log:
        "results/logs/collect_evaluation/eval_summary.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    shell:
        """
        python -m brorl.evaluation collect \
            --summaries {input.summaries:q} \
            --out-csv {output.csv:q} \
            --out-md {output.md:q} \
            --agreement-md {output.agreement_md:q} \
            --agreement-csv {output.agreement_csv:q} \
            >{log:q} 2>&1
        """


# Tracking of evaluation (docs/stages.md#experiment-tracking): in the stage's targets only when config `logging`
# turns W&B or TensorBoard on (helpers/evaluate.smk). A local rule: W&B online needs the internet that compute nodes
# may lack, and an arm's jobs serialize on a lock file in results/eval/{arm}/. WANDB_API_KEY reaches it from the
# environment only, declared with envvars: in train.smk when set; never params.
rule track_evaluation:
    """One evaluated checkpoint's pass@1 (with standard errors and family averages) to W&B (run <arm>-eval, which
    every checkpoint of the arm resumes) and TensorBoard (results/eval/{arm}/tensorboard/),
    and a marker of what went where."""
    input:
        summaries=checkpoint_summaries(),
    output:
        "results/eval/{arm}/step{step}/tracked.json",
    log:
        "results/logs/track_evaluation/{arm}/step{step}.log",
    conda:
        "../../envs/train.yaml"  # the environment with wandb and tensorboard
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        tracking=tracking_settings,  # a change of the tracking settings logs the checkpoint again
        folder=lambda wildcards: f"results/eval/{wildcards.arm}",
    shell:
        """
        python -m brorl.evaluation track \
            --summaries {input.summaries:q} \
            --arm {wildcards.arm:q} \
            --step {wildcards.step} \
            --tracking {params.tracking:q} \
            --folder {params.folder:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """
