"""The context lengths and the tiny model's shape, checked across keys for brorl.config."""

from __future__ import annotations


def check_lengths(cfg: dict) -> list[str]:
    """Training extends the base context, evaluation fits its context, and the tiny model's positions hold the
    longest prompt and response."""
    ctx, problems = cfg["context"], []
    if ctx["train_max_len"] < ctx["base_max_len"]:
        problems.append(
            f"config key 'context.train_max_len': {ctx['train_max_len']} is below "
            f"context.base_max_len = {ctx['base_max_len']}"
        )
    if cfg["evaluation"]["max_tokens"] > ctx["eval_max_len"]:
        problems.append(
            f"config key 'evaluation.max_tokens': {cfg['evaluation']['max_tokens']} exceeds "
            f"context.eval_max_len = {ctx['eval_max_len']}"
        )
    if cfg["engine"] == "embedded":  # the tiny model cannot attend beyond its positions
        model = cfg["base_model"]["embedded_model"]
        need = ctx["prompt_max_len"] + max(ctx["train_max_len"], ctx["eval_max_len"])
        if need > model["max_position_embeddings"]:
            problems.append(
                f"config key 'context.prompt_max_len': prompt_max_len + the longest response budget = "
                f"{need} tokens exceeds base_model.embedded_model.max_position_embeddings = "
                f"{model['max_position_embeddings']} (engine is embedded)"
            )
    return problems


def check_embedded_model(cfg: dict) -> list[str]:
    """The tiny model's key-value heads divide its attention heads."""
    model = cfg["base_model"]["embedded_model"]
    if model["num_heads"] % model["num_kv_heads"]:
        return [
            f"config key 'base_model.embedded_model.num_kv_heads': {model['num_kv_heads']} does not divide "
            f"num_heads = {model['num_heads']}"
        ]
    return []
