# Throughput stage (paper Table 2): vLLM generation samples/s for each throughput.layouts x prefix_caching
# configuration on the start model, the dynamic-sampling pass rate of the two compared arms from their training
# metrics, Table 2 (paper beside reproduction) and a samples/s-vs-N figure. Logic in brorl.throughput.
# Targets: results/tables/table2.{md,tex,csv}, results/figures/throughput_vs_n.{png,pdf}, or one file of the grammar:
#   results/throughput/p{prompts}_n{n}_pc{pc}.json   one configuration (pc: on|off)
#   results/throughput/machine.json                   where the measurements ran (same hardware for all?)
#   results/throughput/pass_rate_by_step.csv          pass rate per step and arm (empty until training has run)


rule bench_throughput:
    """vLLM generation samples/s of the start model for one layout (prompts x N) and prefix-caching setting. With
    throughput.one_engine_per_setting (the tiny preset) one job and one engine measure every layout of a setting,
    each with its own warm-up and repeats, into the same per-configuration files. A file's name is its
    configuration (p<prompts>_n<N>_pc<on|off>.json): the command reads the layouts from --out.
    """
    input:
        model=base_model_dir(),
        prompts=TRAIN_MIX,
        preflight=eval_preflight_input(),
    output:
        bench_files(),
    log:
        bench_log("results/logs/bench_throughput"),
    benchmark:
        bench_log("results/timings/bench_throughput", ".tsv")
    wildcard_constraints:
        prompts=r"[1-9]\d*",
        n=r"[1-9]\d*",
        pc="on|off",
    conda:
        gpu_rule_env("../../envs/eval.yaml")
    container:
        GPU_CONTAINER
    threads: 8  # all cores locally (capped by --cores), so nothing else runs beside a timed job
    resources:
        gpu=1,
        mem_mb=32768,
        runtime=BENCH_RULE_RUNTIME_MIN,  # Table 2's time check reads it too (brorl.ops.plan.throughput)
    params:
        engine=config["engine"],
        max_tokens=THROUGHPUT["max_tokens"],
        max_model_len=config["context"]["prompt_max_len"] + THROUGHPUT["max_tokens"],
        temperature=throughput_temperature(),
        top_p=config["training"]["rollout_top_p"],
        warmup=THROUGHPUT["warmup"],
        repeats=THROUGHPUT["repeats"],
        seed=THROUGHPUT["seed"],
        max_cv=THROUGHPUT["max_cv"],
        # the engine reads vLLM's scheduler limits from its environment (operational_env, common.smk); samples/s
        # depends on them, so Table 2 reruns when they change
        scheduler=scheduler_json(config),
    shell:
        """
        python -m brorl.throughput bench \
            --model {input.model:q} \
            --prompts-file {input.prompts:q} \
            --prefix-caching {wildcards.pc:q} \
            --max-tokens {params.max_tokens} \
            --max-model-len {params.max_model_len} \
            --temperature {params.temperature} \
            --top-p {params.top_p} \
            --warmup {params.warmup} \
            --repeats {params.repeats} \
            --seed {params.seed} \
            --max-cv {params.max_cv} \
            --engine {params.engine:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule tabulate_throughput:
    """Table 2 (paper beside reproduction), the samples/s-vs-N figure and the pass rate by step of the compared arms."""
    input:
        results=throughput_results(),
        metrics=throughput_training_metrics,
    output:
        md=report_file(
            TABLE2_FILES["md"],
            "table2",
            "Throughput",
            table="Table 2",
            format="markdown",
        ),
        tex=TABLE2_FILES["tex"],
        csv=report_file(
            TABLE2_FILES["csv"], "table2", "Throughput", table="Table 2", format="csv"
        ),
        png=report_file(
            THROUGHPUT_FIGURE["png"],
            "throughput_vs_n",
            "Throughput",
            figure="samples/s vs N",
            format="png",
        ),
        pdf=THROUGHPUT_FIGURE["pdf"],
        pass_rate="results/throughput/pass_rate_by_step.csv",
        machine="results/throughput/machine.json",
    log:
        "results/logs/tabulate_throughput/table2.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        arms=json.dumps(throughput_compared_arms(), sort_keys=True),
        metrics=throughput_metrics_flags,
        gpus=config["throughput"]["gpus"],
        setup=training_setup_text(),
        scale=["--tiny-scale"] if config["engine"] == "embedded" else [],
    shell:
        """
        python -m brorl.throughput tabulate \
            --results {input.results:q} \
            --arms {params.arms:q} \
            {params.metrics:q} \
            --gpus {params.gpus} \
            --setup {params.setup:q} \
            {params.scale:q} \
            --out-md {output.md:q} \
            --out-tex {output.tex:q} \
            --out-csv {output.csv:q} \
            --pass-rate-csv {output.pass_rate:q} \
            --figure-png {output.png:q} \
            --figure-pdf {output.pdf:q} \
            --machine-out {output.machine:q} \
            >{log:q} 2>&1
        """
