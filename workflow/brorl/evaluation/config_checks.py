"""evaluation.models, checked across keys for brorl.config."""

from __future__ import annotations


def check_models(cfg: dict) -> list[str]:
    """evaluation.models: not an arm's name (unique among models: the config module's check) (they share the {arm} wildcard), not the start
    checkpoint's `base`; one source each (a hub repo with its revision, or a local path); a paper row that exists."""
    from ..analysis.paper import checkpoint_key, load_paper, paper_checkpoints

    models, problems = cfg["evaluation"]["models"], []
    arms = {a.get("name") for a in cfg["arms"] if isinstance(a, dict)}
    rows = sorted(checkpoint_key(role, step) for role, step in paper_checkpoints(load_paper()))
    for i, m in enumerate(models):
        where = f"config key 'evaluation.models[{i}]"
        if m["name"] == "base" or m["name"] in arms:
            problems.append(f"{where}.name': {m['name']!r} is taken (by the start checkpoint `base` or an arm)")
        if bool(m["repo_id"]) == bool(m["path"]):
            problems.append(f"{where}': give exactly one of repo_id (the hub, with revision) or path (a local folder)")
        elif m["repo_id"] and not m["revision"]:
            problems.append(
                f"{where}.revision': {m['repo_id']} needs a revision (a commit, or a branch `make pin` locks)"
            )
        if m["paper_row"] is not None and m["paper_row"] not in rows:
            problems.append(
                f"{where}.paper_row': {m['paper_row']!r} is not a row of the paper's Table 1 ({', '.join(rows)})"
            )
    return problems
