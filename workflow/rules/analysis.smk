# Analysis stage: per-instance units from every evaluated checkpoint's scores, the paper's paired one-tailed test at
# equal training time, Tables 1 and 3-5 beside the paper's values, Figures 1 and 4 (and the N sweep), SUMMARY.md.
# Input functions: helpers/analysis.smk.
# Logic in brorl.analysis (paper values: workflow/brorl/analysis/paper_results.yaml). Targets:
#   results/stats/instance_scores.parquet   results/stats/significance.json   results/tables/table{1,3,4,5}.{md,tex,csv}
#   results/tables/significance.{md,tex,csv}   results/tables/algorithms.{md,csv} (analysis.algorithms)
#   results/figures/{figure1,figure1_families,figure4,n_sweep}.{png,pdf}   results/SUMMARY.md


rule collect_units:
    """Per-instance units (each problem's mean score over its samples) from every evaluated checkpoint's scores."""
    input:
        scores=evaluation_files("scores.parquet"),
        benchmarks=benchmark_files(),
    output:
        "results/stats/instance_scores.parquet",
    log:
        "results/logs/collect_units/instance_scores.log",
    benchmark:
        "results/timings/collect_units/instance_scores.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        n=EVAL["n_samples"],
        start=f"{BASE_ARM}:{config['base_model']['start_step']}:{EVAL['start_draws']}",
    shell:
        """
        python -m brorl.analysis units \
            --scores {input.scores:q} \
            --benchmarks {input.benchmarks:q} \
            --n {params.n} \
            --start {params.start:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule test_significance:
    """The paper's paired one-tailed test of treatment vs control at equal training time."""
    input:
        units="results/stats/instance_scores.parquet",
        metrics=analysis_metrics(),
    output:
        json="results/stats/significance.json",
        md=analysis_table("significance", "significance", "md"),
        csv=analysis_table("significance", "significance", "csv"),
        tex="results/tables/significance.tex",
    log:
        "results/logs/test_significance/significance.log",
    benchmark:
        "results/timings/test_significance/significance.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        spec=analysis_spec(),
    shell:
        """
        python -m brorl.analysis significance \
            --units {input.units:q} \
            --metrics {input.metrics:q} \
            --spec {params.spec:q} \
            --out-json {output.json:q} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            --out-tex {output.tex:q} \
            >{log:q} 2>&1
        """


rule compare_algorithms:
    """Does the N gain hold per advantage estimator: each pair's N=512 arm against its N=16 arm (analysis.algorithms)."""
    input:
        units="results/stats/instance_scores.parquet",
        metrics=analysis_metrics(),
    output:
        md=analysis_table("algorithms", "The N gain per advantage estimator", "md"),
        csv=analysis_table("algorithms", "The N gain per advantage estimator", "csv"),
    log:
        "results/logs/compare_algorithms/algorithms.log",
    benchmark:
        "results/timings/compare_algorithms/algorithms.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        spec=analysis_spec(),
    shell:
        """
        python -m brorl.analysis algorithms \
            --units {input.units:q} \
            --metrics {input.metrics:q} \
            --spec {params.spec:q} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            >{log:q} 2>&1
        """


rule make_tables:
    """Tables 1 and 3-5 of the paper, the reproduction beside the paper's values."""
    input:
        units="results/stats/instance_scores.parquet",
        metrics=analysis_metrics(),
    output:
        t1_md=analysis_table("table1", "Table 1", "md"),
        t1_csv=analysis_table("table1", "Table 1", "csv"),
        t3_md=analysis_table("table3", "Table 3 (math)", "md"),
        t3_csv=analysis_table("table3", "Table 3 (math)", "csv"),
        t4_md=analysis_table("table4", "Table 4 (code)", "md"),
        t4_csv=analysis_table("table4", "Table 4 (code)", "csv"),
        t5_md=analysis_table("table5", "Table 5 (Reasoning Gym)", "md"),
        t5_csv=analysis_table("table5", "Table 5 (Reasoning Gym)", "csv"),
        tex=expand("results/tables/{table}.tex", table=ANALYSIS_TABLES),
    log:
        "results/logs/make_tables/tables.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=30,
    params:
        spec=analysis_spec(),
        out_dir=lambda wildcards, output: os.path.dirname(output.t1_md),
    shell:
        """
        python -m brorl.analysis tables \
            --units {input.units:q} \
            --metrics {input.metrics:q} \
            --spec {params.spec:q} \
            --out-dir {params.out_dir:q} \
            >{log:q} 2>&1
        """


rule plot_figures:
    """Figures 1 and 4 (and the N sweep with two or more sweep arms), and the per-task patterns table."""
    input:
        units="results/stats/instance_scores.parquet",
        metrics=analysis_metrics(),
    output:
        **n_sweep_figures(),
        figure1_png=analysis_figure("figure1", "Figure 1"),
        figure1_pdf="results/figures/figure1.pdf",
        families_png=analysis_figure("figure1_families", "Figure 1, every family"),
        families_pdf="results/figures/figure1_families.pdf",
        patterns="results/tables/task_patterns.csv",
        figure4_png=analysis_figure("figure4", "Figure 4"),
        figure4_pdf="results/figures/figure4.pdf",
        points="results/figures/figures.json",
    log:
        "results/logs/plot_figures/figures.log",
    benchmark:
        "results/timings/plot_figures/figures.tsv"
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4096,
        runtime=60,
    params:
        spec=analysis_spec(),
        sweep=n_sweep_flags,
    shell:
        """
        python -m brorl.analysis figures \
            --units {input.units:q} \
            --metrics {input.metrics:q} \
            --spec {params.spec:q} \
            --figure1-png {output.figure1_png:q} \
            --figure1-pdf {output.figure1_pdf:q} \
            --families-png {output.families_png:q} \
            --families-pdf {output.families_pdf:q} \
            --patterns-csv {output.patterns:q} \
            --figure4-png {output.figure4_png:q} \
            --figure4-pdf {output.figure4_pdf:q} \
            --points-json {output.points:q} \
            {params.sweep:q} \
            >{log:q} 2>&1
        """


rule write_summary:
    """results/SUMMARY.md: claim by claim, what was reproduced, at which scale, and what differs."""
    input:
        significance="results/stats/significance.json",
        table1="results/tables/table1.csv",
        tables=expand("results/tables/table{i}.csv", i=(3, 4, 5)),
        patterns="results/tables/task_patterns.csv",
        claims=simulation_claims_input(),
        table2=table2_input(),
        probe=probe_summary_input(),
        in_batch=in_batch_summary_input(),
        decision=decision_summary_input(),
    output:
        report_file(
            "results/SUMMARY.md", "summary", "Analysis", "Summary", file="SUMMARY.md"
        ),
    log:
        "results/logs/write_summary/summary.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        spec=analysis_spec(),
        claims=lambda wildcards, input: optional_flag("--claims", input.claims),
        table2=lambda wildcards, input: optional_flag("--table2-md", input.table2),
        probe=lambda wildcards, input: optional_flag("--probe", input.probe[:1])
        + optional_flag("--probe-arms", input.probe[1:]),
        in_batch=lambda wildcards, input: (
            ["--in-batch", *input.in_batch] if input.in_batch else []
        ),
        decision=lambda wildcards, input: optional_flag("--decision", input.decision),
        # outputs of the exempt rules made by code that has changed since (reruns.smk): SUMMARY.md says so, and is
        # rewritten when this changes
        stale_code=lambda wildcards: json.dumps(STALE_CODE, sort_keys=True),
    shell:
        """
        python -m brorl.analysis summary \
            --spec {params.spec:q} \
            --significance {input.significance:q} \
            --table1 {input.table1:q} \
            --benchmark-tables {input.tables:q} \
            --patterns {input.patterns:q} \
            {params.claims:q} \
            {params.table2:q} \
            {params.probe:q} \
            {params.in_batch:q} \
            {params.decision:q} \
            --stale-code {params.stale_code:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule register_decision:
    """The decision experiment's thresholds, frozen before any of its jobs runs (written once: delete the file to
    register again; rule decide withholds its verdicts when the config's block differs from this record).
    """
    output:
        protected(DECISION_FILE),
    log:
        "results/logs/register_decision/registration.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=512,
        runtime=5,
    shell:
        """
        python -m brorl.analysis register-decision \
            --block "$BRORL_DECISION_BLOCK" \
            --planned-steps "$BRORL_DECISION_PLANNED" \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule decide:
    """F1 (the released weights' gain over the start) and F3 (kept samples per GPU-hour of the two step shapes)
    against the registered thresholds: supported, falsified or inconclusive (docs/stages.md#the-decision-experiment).
    """
    input:
        registration=DECISION_FILE,
        units="results/stats/instance_scores.parquet",
        metrics=expand(
            "results/train/{arm}/metrics.jsonl",
            arm=[DECISION["f3"]["treatment"], DECISION["f3"]["control"]],
        ),
    output:
        md=report_file(
            DECISION_TABLES["md"],
            "decision",
            "Analysis",
            table="The decision experiment",
            format="markdown",
        ),
        csv=DECISION_TABLES["csv"],
        json=DECISION_TABLES["json"],
    log:
        "results/logs/decide/decision.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2048,
        runtime=10,
    params:
        block=json.dumps(DECISION, sort_keys=True),
        start_arm=BASE_ARM,
        start_step=config["base_model"]["start_step"],
        gpus=decision_gpus(),
    shell:
        """
        python -m brorl.analysis decide \
            --block {params.block:q} \
            --registration {input.registration:q} \
            --units {input.units:q} \
            --metrics {input.metrics:q} \
            --start-arm {params.start_arm:q} \
            --start-step {params.start_step} \
            --gpus {params.gpus} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            --out-json {output.json:q} \
            >{log:q} 2>&1
        """
