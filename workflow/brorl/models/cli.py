"""Command line of the model stage: ``python -m brorl.models {build-tiny,download,extend-context,verify,check}``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..cli import run_command
from .check import MANIFEST_NAME, ModelError, check_model_dir, manifest_hash
from .verify import verify_model_dir


def _cmd_build_tiny(a: argparse.Namespace) -> None:
    from .tiny import build_tiny_model

    out = build_tiny_model(
        a.out,
        hidden_size=a.hidden_size,
        intermediate_size=a.intermediate_size,
        num_layers=a.num_layers,
        num_heads=a.num_heads,
        num_kv_heads=a.num_kv_heads,
        max_position_embeddings=a.max_position_embeddings,
        tie_word_embeddings=a.tie,
        seed=a.seed,
        context_length=a.context_length,
        architecture=a.architecture,
    )
    manifest = json.loads((out / "brorl_manifest.json").read_text())
    print(
        f"tiny {manifest['architecture']} ({manifest['n_parameters']:,} parameters, seed {a.seed}) -> {out} "
        f"[manifest {manifest_hash(out)[:12]}]"
    )


def _cmd_check(a: argparse.Namespace) -> None:
    config = check_model_dir(a.model, None if a.architecture is None else tuple(a.architecture))
    print(
        f"{a.model}: OK ({(config.get('architectures') or ['?'])[0]}, {config.get('num_hidden_layers')} layers, "
        f"hidden {config.get('hidden_size')}, manifest {manifest_hash(a.model)[:12]})"
    )


def _cmd_download(a: argparse.Namespace) -> None:
    from .download import download_base_model, manifest_summary

    t0 = time.perf_counter()
    manifest = download_base_model(
        a.out,
        a.repo_id,
        a.revision,
        local_path=a.local,
        cache_dir=a.cache_dir,
        retries=a.retries,
        link=not a.copy,
        allow_unpinned=a.allow_unpinned,
        config_key=a.config_key,
    )
    print(
        f"{a.out}: {manifest_summary(manifest)} [manifest {manifest_hash(a.out)[:12]}, "
        f"{time.perf_counter() - t0:.2f} s]"
    )


def _cmd_extend(a: argparse.Namespace) -> None:
    from .extend import extend_context

    rope = None if a.rope_scaling == "none" else a.rope_scaling
    manifest = extend_context(a.base, a.out, a.length, rope_scaling=rope, link=not a.copy, threads=a.threads)
    check, ext = manifest["forward_check"], manifest["extension"]
    print(
        f"{a.out}: {ext['method']}, positions {ext['max_position_embeddings'][1]}; forward pass over "
        f"{check['tokens']} tokens (max position {check['max_position_id']}) in {check['forward_s']:.2f} s, "
        f"finite logits: {check['finite_logits']} [manifest {manifest_hash(a.out)[:12]}]"
    )


def _cmd_verify(a: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    manifest = verify_model_dir(a.model, None if a.served else tuple(a.architecture))
    size = sum(f["bytes"] for f in manifest["files"].values())
    print(
        f"{a.model}: OK, {len(manifest['files'])} files ({size / 2**20:.1f} MiB) match {MANIFEST_NAME} "
        f"[{manifest_hash(a.model)[:12]}, {time.perf_counter() - t0:.2f} s]"
    )


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
    p.add_argument("--architecture", choices=("qwen2", "llama"), default="qwen2", help="the model family")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="context the model is declared trained with (tokenizer limit; default: all positions)",
    )
    p.set_defaults(func=_cmd_build_tiny)
    p = sub.add_parser("download", help="stage a model (hub snapshot or local folder) with a manifest")
    p.add_argument("--out", required=True, type=Path, help="the model folder to write (replaced if present)")
    p.add_argument("--repo-id", required=True, help="hub repository (recorded also for a local source)")
    p.add_argument("--revision", required=True, help="hub revision: a 40-hex commit hash for a paper run")
    p.add_argument("--local", type=Path, default=None, help="stage this local model folder instead of the hub")
    p.add_argument("--cache-dir", type=Path, default=None, help="hub cache (resumes interrupted downloads)")
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--copy", action="store_true", help="copy files instead of hard-linking them")
    p.add_argument(
        "--allow-unpinned",
        action="store_true",
        help="download a branch or tag that is not a commit hash (config allow_unpinned)",
    )
    p.add_argument(
        "--config-key",
        default="base_model.revision",
        help="the config key of the revision, named when an unpinned one is refused",
    )
    p.set_defaults(func=_cmd_download)
    p = sub.add_parser("extend-context", help="derive a model folder for a longer context and prove it")
    p.add_argument("--base", required=True, type=Path, help="a verified base model folder")
    p.add_argument("--length", required=True, type=int, help="target context: prompt + response tokens")
    p.add_argument(
        "--rope-scaling",
        choices=("none", "linear", "yarn"),
        default="none",
        help="RoPE scaling allowed when the length exceeds the model's positions (none: refuse)",
    )
    p.add_argument("--out", required=True, type=Path, help="the derived folder (replaced if present)")
    p.add_argument("--threads", type=int, default=None, help="torch threads of the forward pass")
    p.add_argument("--copy", action="store_true", help="copy weights instead of hard-linking them")
    p.set_defaults(func=_cmd_extend)
    p = sub.add_parser("verify", help="verify a staged model folder against its manifest (sha256 of every file)")
    p.add_argument("model", type=Path)
    p.add_argument("--architecture", nargs="*", default=[], help="accepted architectures (none: any)")
    p.add_argument("--served", action="store_true", help="accept the architectures the pinned vLLM generates with")
    p.set_defaults(func=_cmd_verify)
    p = sub.add_parser("check", help="check a model folder (files, JSON, manifest hashes, architecture)")
    p.add_argument("model", type=Path)
    p.add_argument(
        "--architecture", nargs="*", default=None, help="accepted architectures (default: those vLLM serves; none: any)"
    )
    p.set_defaults(func=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    run_command(args, (ModelError, ValueError))


if __name__ == "__main__":
    main()
