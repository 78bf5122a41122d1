# Input functions of the simulation stage (workflow/rules/simulation.smk).


def simulation_targets():
    """Figure 3, the claims tables and the theory checks (none when simulation.enabled is false)."""
    if not SIM["enabled"]:
        return []
    targets = [
        "results/simulation/theory_checks.json",
        "results/figures/figure3.png",
        "results/figures/figure3.pdf",
        "results/tables/simulation_claims.md",
        "results/tables/simulation_claims.csv",
    ]
    if SENSITIVITY["enabled"]:
        targets += [
            "results/tables/optimizer_sensitivity.md",
            "results/tables/optimizer_sensitivity.csv",
        ]
    if SIM["n_grid"]["enabled"]:
        targets += [
            f"results/{kind}/simulation_n_grid.{ext}"
            for kind, exts in (("tables", ("md", "csv")), ("figures", ("png", "pdf")))
            for ext in exts
        ]
    # every run, a target of its own: a deleted or killed one is remade by the plain command
    return targets + simulation_all_runs() + simulation_sensitivity_runs()


STAGE_TARGETS.append(simulation_targets)


def simulation_main_runs():
    """One parquet per (N, seed) of simulation.n_values x simulation.seeds."""
    return expand(
        "results/simulation/N{n}_seed{seed}.parquet",
        n=SIM["n_values"],
        seed=SIM["seeds"],
    )


def simulation_grid_runs():
    """One parquet per (N, seed) of simulation.n_grid (the main sweep's rule and files; shared N are one file)."""
    grid = SIM["n_grid"]
    return expand(
        "results/simulation/N{n}_seed{seed}.parquet",
        n=grid["n_values"],
        seed=grid["seeds"],
    )


def simulation_all_pairs():
    """The (N, seed) of every main-sweep and N-grid run, each once, in a fixed order (simulate_token_level's
    outputs and its --n/--seed lists pair up in this order)."""
    pairs = [(n, seed) for n in SIM["n_values"] for seed in SIM["seeds"]]
    if SIM["n_grid"]["enabled"]:
        pairs += [
            (n, seed)
            for n in SIM["n_grid"]["n_values"]
            for seed in SIM["n_grid"]["seeds"]
        ]
    return list(dict.fromkeys(pairs))


def simulation_all_runs():
    """The files of simulation_all_pairs(): results/simulation/N{n}_seed{seed}.parquet."""
    return [
        f"results/simulation/N{n}_seed{seed}.parquet"
        for n, seed in simulation_all_pairs()
    ]


def sensitivity_pairs():
    """The (N, seed) of each sensitivity variant's runs (simulation.sensitivity.n_values x seeds)."""
    return [(n, seed) for n in SENSITIVITY["n_values"] for seed in SENSITIVITY["seeds"]]


def sensitivity_variant_runs():
    """The files of one variant's runs, the {variant} wildcard left open (simulate_sensitivity's outputs)."""
    return [
        f"results/simulation/sensitivity/{{variant}}/N{n}_seed{seed}.parquet"
        for n, seed in sensitivity_pairs()
    ]


def training_sweep_n():
    """N values of analysis.n_sweep's arms (marked in the simulation's N-grid figure)."""
    by_name = {arm["name"]: arm["n"] for arm in config["arms"]}
    return [by_name[a] for a in config["analysis"]["n_sweep"]["arms"] if a in by_name]


def simulation_sensitivity_runs():
    """One parquet per (variant, N, seed) of the sensitivity study; none when it is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return expand(
        "results/simulation/sensitivity/{variant}/N{n}_seed{seed}.parquet",
        variant=[v["name"] for v in SENSITIVITY["variants"]],
        n=SENSITIVITY["n_values"],
        seed=SENSITIVITY["seeds"],
    )


def variant_optimizer(wildcards):
    """simulation.optimizer with the variant's non-null keys replacing it."""
    variant = next(v for v in SENSITIVITY["variants"] if v["name"] == wildcards.variant)
    overrides = {k: v for k, v in variant.get("optimizer", {}).items() if v is not None}
    return {**SIM["optimizer"], **overrides}


def anchor_flags(variant=None):
    """--anchor-class and --freeze-anchor of the main sweep, or of a sensitivity variant (its non-null keys win)."""
    own = {k: v for k, v in (variant or {}).items() if v is not None}
    anchor = own.get("anchor_class", SIM["anchor_class"])
    frozen = own.get("freeze_anchor", SIM["freeze_anchor"])
    return f"--anchor-class {anchor}" + (" --freeze-anchor" if frozen else "")


def variant_anchor_flags(wildcards):
    """anchor_flags of the sensitivity variant of ``wildcards`` (params of simulate_sensitivity)."""
    variant = next(v for v in SENSITIVITY["variants"] if v["name"] == wildcards.variant)
    return anchor_flags(variant)


def variant_optimizer_key(key):
    """Input function for one optimizer key of a sensitivity variant (params of simulate_sensitivity)."""

    def get(wildcards):
        return variant_optimizer(wildcards)[key]

    return get


def optimizer_sensitivity_tables():
    """Named outputs of tabulate_simulation for the sensitivity table; none when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return {}
    return {
        "sensitivity_md": report_file(
            "results/tables/optimizer_sensitivity.md",
            "optimizer_sensitivity",
            "Simulation",
            table="optimizer sensitivity",
            format="markdown",
        ),
        "sensitivity_csv": report_file(
            "results/tables/optimizer_sensitivity.csv",
            "optimizer_sensitivity",
            "Simulation",
            table="optimizer sensitivity",
            format="csv",
        ),
    }


def sensitivity_table_flags(wildcards, output):
    """The claims CLI's sensitivity-table flags, empty when the study is disabled."""
    if not SENSITIVITY["enabled"]:
        return []
    return [
        "--sensitivity-md",
        output.sensitivity_md,
        "--sensitivity-csv",
        output.sensitivity_csv,
    ]
