"""Command line of the model stage: ``python -m brorl.models {build-tiny,check}``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..cli import run_command
from .check import ModelError, check_model_dir, manifest_hash


def _cmd_build_tiny(a: argparse.Namespace) -> None:
    from .tiny import build_tiny_model

    out = build_tiny_model(a.out, hidden_size=a.hidden_size, intermediate_size=a.intermediate_size,
                           num_layers=a.num_layers, num_heads=a.num_heads, num_kv_heads=a.num_kv_heads,
                           max_position_embeddings=a.max_position_embeddings, tie_word_embeddings=a.tie,
                           seed=a.seed)  # fmt: skip
    manifest = json.loads((out / "brorl_manifest.json").read_text())
    print(f"tiny Qwen2 ({manifest['n_parameters']:,} parameters, seed {a.seed}) -> {out} "
          f"[manifest {manifest_hash(out)[:12]}]")  # fmt: skip


def _cmd_check(a: argparse.Namespace) -> None:
    config = check_model_dir(a.model, tuple(a.architecture))
    print(f"{a.model}: OK ({(config.get('architectures') or ['?'])[0]}, {config.get('num_hidden_layers')} layers, "
          f"hidden {config.get('hidden_size')}, manifest {manifest_hash(a.model)[:12]})")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m brorl.models", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build-tiny", help="build the tiny offline Qwen2 model folder")
    p.add_argument("--out", required=True, type=Path, help="the model folder to write (replaced if present)")
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--intermediate-size", type=int, default=512)
    p.add_argument("--num-layers", type=int, default=4)
    p.add_argument("--num-heads", type=int, default=4)
    p.add_argument("--num-kv-heads", type=int, default=2)
    p.add_argument("--max-position-embeddings", type=int, default=1024)
    p.add_argument("--tie", action="store_true", help="tie lm_head to the embeddings (not recommended on CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_build_tiny)
    p = sub.add_parser("check", help="check a model folder (files, JSON, manifest hashes, architecture)")
    p.add_argument("model", type=Path)
    p.add_argument("--architecture", nargs="*", default=["Qwen2ForCausalLM"],
                   help="accepted architectures (none: any)")  # fmt: skip
    p.set_defaults(func=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    run_command(args, (ModelError, ValueError))


if __name__ == "__main__":
    main()
