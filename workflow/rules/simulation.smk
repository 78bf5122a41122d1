# Simulation stage: the token-level simulation of paper section 4.1 (Figure 3), its optimizer-sensitivity study
# and the numerical checks of Theorem 1, Lemma 2 and Corollary 3. Cheap CPU jobs; logic in brorl.simulation.


rule simulate_token_level:
    """Every run of the token-level simulation (paper section 4.1): simulation.n_values x seeds and the N grid, one
    file per (N, seed), in one process (torch's import was most of a separate job's time).
    """
    output:
        simulation_all_runs(),
    log:
        "results/logs/simulate_token_level/all_runs.log",
    benchmark:
        "results/timings/simulate_token_level/all_runs.tsv"
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=60,
    params:
        vocab=SIM["vocab"],
        correct=SIM["correct"],
        init_correct=SIM["init_correct"],
        init_anchor=SIM["init_anchor"],
        steps=SIM["steps"],
        optimizer=SIM["optimizer"]["name"],
        lr=SIM["optimizer"]["lr"],
        betas=SIM["optimizer"]["betas"],
        eps=SIM["optimizer"]["eps"],
        weight_decay=SIM["optimizer"]["weight_decay"],
        anchor=anchor_flags(),
        n=[n for n, _ in simulation_all_pairs()],
        seed=[seed for _, seed in simulation_all_pairs()],
    shell:
        """
        python -m brorl.simulation run \
            --vocab {params.vocab} \
            --correct {params.correct} \
            --init-correct {params.init_correct} \
            --init-anchor {params.init_anchor} \
            --n {params.n} \
            --steps {params.steps} \
            --optimizer {params.optimizer:q} \
            --lr {params.lr} \
            --betas {params.betas} \
            --eps {params.eps} \
            --weight-decay {params.weight_decay} \
            {params.anchor} \
            --seed {params.seed} \
            --label main \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule simulate_sensitivity:
    """The runs of one sensitivity variant (its optimizer and anchor settings) at every N and seed of the study,
    one file per (N, seed), in one process."""
    output:
        sensitivity_variant_runs(),
    log:
        "results/logs/simulate_sensitivity/{variant}.log",
    benchmark:
        "results/timings/simulate_sensitivity/{variant}.tsv"
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=60,
    params:
        vocab=SIM["vocab"],
        correct=SIM["correct"],
        init_correct=SIM["init_correct"],
        init_anchor=SIM["init_anchor"],
        steps=SIM["steps"],
        optimizer=variant_optimizer_key("name"),
        lr=variant_optimizer_key("lr"),
        betas=variant_optimizer_key("betas"),
        eps=variant_optimizer_key("eps"),
        weight_decay=variant_optimizer_key("weight_decay"),
        anchor=variant_anchor_flags,
        n=[n for n, _ in sensitivity_pairs()],
        seed=[seed for _, seed in sensitivity_pairs()],
    shell:
        """
        python -m brorl.simulation run \
            --vocab {params.vocab} \
            --correct {params.correct} \
            --init-correct {params.init_correct} \
            --init-anchor {params.init_anchor} \
            --n {params.n} \
            --steps {params.steps} \
            --optimizer {params.optimizer:q} \
            --lr {params.lr} \
            --betas {params.betas} \
            --eps {params.eps} \
            --weight-decay {params.weight_decay} \
            {params.anchor} \
            --seed {params.seed} \
            --label {wildcards.variant:q} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule check_theory:
    """Numerical checks of Theorem 1, Lemma 2 and Corollary 3."""
    output:
        report_file(
            "results/simulation/theory_checks.json",
            "theory_checks",
            "Simulation",
            check="Theorem 1, Lemma 2, Corollary 3",
        ),
    log:
        "results/logs/check_theory/theory_checks.log",
    benchmark:
        "results/timings/check_theory/theory_checks.tsv"
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=30,
    params:
        vocab=SIM["vocab"],
        correct=SIM["correct"],
        init_correct=SIM["init_correct"],
        init_anchor=SIM["init_anchor"],
        n_values=SIM["theory"]["n_values"],
        mc_trials=SIM["theory"]["mc_trials"],
        theorem_draws=SIM["theory"]["theorem_draws"],
        finite_step=SIM["theory"]["finite_step"],
        seed=SIM["theory"]["seed"],
    shell:
        """
        python -m brorl.simulation check-theory \
            --vocab {params.vocab} \
            --correct {params.correct} \
            --init-correct {params.init_correct} \
            --init-anchor {params.init_anchor} \
            --n-values {params.n_values} \
            --mc-trials {params.mc_trials} \
            --theorem-draws {params.theorem_draws} \
            --finite-step {params.finite_step} \
            --seed {params.seed} \
            --out {output:q} \
            >{log:q} 2>&1
        """


rule plot_simulation:
    """Figure 3: Q_pos, % correct tokens improved and worst drop vs step, one curve per N of the main sweep."""
    input:
        runs=simulation_main_runs(),
    output:
        png=report_file(
            "results/figures/figure3.png",
            "figure3",
            "Simulation",
            figure="3",
            format="png",
        ),
        pdf=report_file(
            "results/figures/figure3.pdf",
            "figure3",
            "Simulation",
            figure="3",
            format="pdf",
        ),
    log:
        "results/logs/plot_simulation/figure3.log",
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    shell:
        """
        python -m brorl.simulation figure \
            --runs {input.runs:q} \
            --png {output.png:q} \
            --pdf {output.pdf:q} \
            >{log:q} 2>&1
        """


rule tabulate_n_grid:
    """The gain over a fine N grid (monotonic? concave?) as a table and a figure, the trained arms' N marked."""
    input:
        runs=simulation_grid_runs(),
    output:
        md=report_file(
            "results/tables/simulation_n_grid.md",
            "simulation_n_grid",
            "Simulation",
            table="gain over N",
            format="markdown",
        ),
        csv="results/tables/simulation_n_grid.csv",
        png=report_file(
            "results/figures/simulation_n_grid.png",
            "simulation_n_grid",
            "Simulation",
            figure="gain over N",
            format="png",
        ),
        pdf="results/figures/simulation_n_grid.pdf",
    log:
        "results/logs/tabulate_n_grid/n_grid.log",
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        mark=training_sweep_n(),
    shell:
        """
        python -m brorl.simulation n-grid \
            --runs {input.runs:q} \
            --mark {params.mark} \
            --out-md {output.md:q} \
            --out-csv {output.csv:q} \
            --png {output.png:q} \
            --pdf {output.pdf:q} \
            >{log:q} 2>&1
        """


rule tabulate_simulation:
    """Which Figure 3 claims hold (table), and the optimizer-sensitivity table when the study is on."""
    input:
        runs=simulation_main_runs(),
        sensitivity_runs=simulation_sensitivity_runs(),
    output:
        **optimizer_sensitivity_tables(),
        claims_md=report_file(
            "results/tables/simulation_claims.md",
            "simulation_claims",
            "Simulation",
            table="Figure 3 claims",
            format="markdown",
        ),
        claims_csv=report_file(
            "results/tables/simulation_claims.csv",
            "simulation_claims",
            "Simulation",
            table="Figure 3 claims",
            format="csv",
        ),
    log:
        "results/logs/tabulate_simulation/tables.log",
    conda:
        "../../envs/sim.yaml"
    threads: 1
    resources:
        mem_mb=1024,
        runtime=10,
    params:
        near_zero_rel_tol=SIM["claims"]["near_zero_rel_tol"],
        full_improvement_pct=SIM["claims"]["full_improvement_pct"],
        sensitivity_tables=sensitivity_table_flags,
    shell:
        """
        python -m brorl.simulation claims \
            --runs {input.runs:q} \
            --sensitivity-runs {input.sensitivity_runs:q} \
            --near-zero-rel-tol {params.near_zero_rel_tol} \
            --full-improvement-pct {params.full_improvement_pct} \
            --out-md {output.claims_md:q} \
            --out-csv {output.claims_csv:q} \
            {params.sensitivity_tables:q} \
            >{log:q} 2>&1
        """
