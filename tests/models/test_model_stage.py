"""The model stage: download_base_model (local folder and hub paths, the file filter, the revision warning, the
manifest written last), verify_model_dir's refusals (flipped byte, deleted or truncated file, missing manifest,
unlisted file), extend_context (the right config, a forward pass at the target length, YaRN beyond the model's
positions, clear refusals when the architecture cannot reach the length), and the model rules: a dry run of the
paper config and a real run of the tiny preset's model rules in a private copy of the workflow.

Only the network call is replaced (``hub_snapshot`` returns a local folder laid out like the hub cache); staging,
checks, manifests, extension and the forward pass are the real code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import brorl.models.download as dl
import pytest
from brorl.config import load_yaml_config
from brorl.models import (
    MANIFEST_NAME,
    ContextError,
    ModelError,
    build_tiny_model,
    download_base_model,
    extend_context,
    is_pinned,
    plan_extension,
    verify_model_dir,
)
from brorl.models.files import select_files
from helpers import CONFIG, SHORT_WARM_START, TINY, copy_workflow, job_counts, output_of, snakemake, write_yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "HF_HUB_OFFLINE": "1"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"
POSITIONS, BASE_CONTEXT = 256, 200  # a small tiny model: 256 positions, "trained" with 200


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The tiny model as build_tiny_model writes it (with its own manifest), plus files a hub repo also carries."""
    folder = build_tiny_model(
        tmp_path_factory.mktemp("build") / "tiny", max_position_embeddings=POSITIONS, context_length=BASE_CONTEXT
    )
    return folder


@pytest.fixture(scope="module")
def base(built, tmp_path_factory) -> Path:
    """The staged start model (local source), shared read-only by the extension tests."""
    out = tmp_path_factory.mktemp("models") / "tiny-qwen2"
    download_base_model(out, "brorl/tiny-qwen2", "seed0", local_path=built)
    return out


def hub_like(built: Path, root: Path, extra: dict[str, bytes] | None = None) -> Path:
    """A folder laid out like huggingface_hub's cache snapshot of the tiny model (no manifest; extra files)."""
    snap = root / "models--brorl--tiny" / "snapshots" / COMMIT
    if snap.exists():  # the hub cache keeps a snapshot: a second download gets the same folder
        return snap
    snap.mkdir(parents=True)
    for p in built.iterdir():
        if p.name != MANIFEST_NAME:
            shutil.copyfile(p, snap / p.name)
    for name, data in (extra or {}).items():
        (snap / name).parent.mkdir(parents=True, exist_ok=True)
        (snap / name).write_bytes(data)
    return snap


def private_copy(model: Path, dest: Path) -> Path:
    """A copy with its own inodes, so that corrupting it never touches the shared fixtures' hard-linked weights."""
    shutil.copytree(model, dest, copy_function=shutil.copyfile)
    return dest


# ------------------------------------------------------------------------------------------------------- files
def test_file_filter_keeps_config_tokenizer_and_safetensors_only():
    names = [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.json",
        "merges.txt",
        "chat_template.jinja",
        "special_tokens_map.json",
        "model.safetensors.index.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "pytorch_model.bin",
        "pytorch_model.bin.index.json",
        "consolidated.pth",
        "onnx/model.onnx",
        "onnx/model.safetensors",
        "model.gguf",
        "tf_model.h5",
        "flax_model.msgpack",
        "README.md",
        ".gitattributes",
        "figure.png",
    ]
    kept, excluded = select_files(names)
    assert kept == sorted(names[:11])
    assert excluded == sorted(names[11:])


def test_revision_must_be_a_full_commit_hash_to_count_as_pinned():
    assert is_pinned(COMMIT)
    for revision in ("main", "v2", COMMIT[:12], COMMIT.upper(), COMMIT + "0", None):
        assert not is_pinned(revision)


def test_an_unpinned_hub_model_is_refused_before_any_download(tmp_path, monkeypatch):
    monkeypatch.setattr(dl, "hub_snapshot", lambda *a, **k: pytest.fail("downloaded an unpinned revision"))
    with pytest.raises(ModelError) as error:
        download_base_model(tmp_path / "out", "o/r", "main")
    words = str(error.value)
    assert "o/r@main is not pinned" in words and "Set base_model.revision to the commit" in words
    assert "HfApi().model_info('o/r', revision='main').sha" in words and "allow_unpinned: true" in words
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ local source
def test_local_source_is_staged_with_a_manifest_and_hard_linked_weights(built, tmp_path):
    src = private_copy(built, tmp_path / "src")
    (src / "pytorch_model.bin").write_bytes(b"old format")
    (src / "README.md").write_text("card")
    out = tmp_path / "models" / "tiny"
    manifest = download_base_model(out, "brorl/tiny-qwen2", "seed0", local_path=src)
    assert set(manifest["files"]) == {p.name for p in src.iterdir()} - {MANIFEST_NAME, "pytorch_model.bin", "README.md"}
    assert manifest["excluded_files"] == ["README.md", "pytorch_model.bin"]  # listed, not silently dropped
    assert manifest["source"]["kind"] == "local" and manifest["source"]["path"] == str(src)
    assert manifest["source"]["manifest"]["build"]["context_length"] == BASE_CONTEXT  # the build record is kept
    assert manifest["provenance"]["packages"]["transformers"] and manifest["stage"] == "download_base_model"
    assert (out / "model.safetensors").stat().st_ino == (src / "model.safetensors").stat().st_ino
    assert (out / "config.json").stat().st_ino != (src / "config.json").stat().st_ino  # small files are copied
    assert verify_model_dir(out) == json.loads((out / MANIFEST_NAME).read_text())
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no partial folder left


def test_a_corrupt_source_is_never_propagated(built, tmp_path):
    src = private_copy(built, tmp_path / "src")
    (src / "tokenizer.json").write_text((src / "tokenizer.json").read_text().replace("<|im_end|>", "<|im_END|>"))
    with pytest.raises(ModelError, match="tokenizer.json sha256 .* differs"):
        download_base_model(tmp_path / "out", "o/r", "main", local_path=src)
    assert not (tmp_path / "out").exists()


def test_a_missing_source_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match="model source folder does not exist"):
        download_base_model(tmp_path / "out", "o/r", "main", local_path=tmp_path / "nowhere")


# -------------------------------------------------------------------------------------------------- hub source
def test_hub_source_goes_through_the_same_path(built, tmp_path, monkeypatch, capsys):
    calls = []

    def fake_snapshot(repo_id, revision, cache_dir, retries=3):
        calls.append((repo_id, revision, cache_dir))
        return hub_like(built, tmp_path / "cache", {"model.onnx": b"x", "onnx/decoder.onnx": b"y"}), COMMIT

    monkeypatch.setattr(dl, "hub_snapshot", fake_snapshot)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    out = tmp_path / "models" / "tiny"
    manifest = download_base_model(out, "brorl/tiny", "main", cache_dir=tmp_path / "cache", allow_unpinned=True)
    assert calls == [("brorl/tiny", "main", tmp_path / "cache")]
    assert "brorl/tiny@main is not pinned (allow_unpinned: true)" in capsys.readouterr().err
    src = manifest["source"]
    assert (src["kind"], src["revision"], src["resolved_commit"], src["revision_pinned"]) == (
        "hub",
        "main",
        COMMIT,
        False,
    )
    assert manifest["excluded_files"] == ["model.onnx", "onnx/decoder.onnx"]
    assert "hf_secret_value" not in (out / MANIFEST_NAME).read_text()  # the token is never recorded
    verify_model_dir(out)

    again = download_base_model(tmp_path / "pinned", "brorl/tiny", COMMIT)  # a pinned revision: no warning
    assert again["source"]["revision_pinned"] is True and "not pinned" not in capsys.readouterr().err
    with pytest.raises(ModelError, match="returned commit .* not the pinned one"):
        download_base_model(tmp_path / "other", "brorl/tiny", "f" * 40)


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-100]), "truncated"),
        (lambda d: (d / "config.json").unlink(), "no config.json"),
        (lambda d: (d / "tokenizer.json").unlink(), "missing tokenizer"),
    ],
)
def test_a_partial_hub_download_is_refused_and_nothing_is_written(built, tmp_path, monkeypatch, damage, words):
    def fake_snapshot(repo_id, revision, cache_dir, retries=3):
        snap = hub_like(built, tmp_path / "cache")
        damage(snap)
        return snap, COMMIT

    monkeypatch.setattr(dl, "hub_snapshot", fake_snapshot)
    with pytest.raises(ModelError, match=words):
        download_base_model(tmp_path / "models" / "tiny", "brorl/tiny", COMMIT)
    models = tmp_path / "models"
    assert not models.exists() or not list(models.iterdir())  # neither the folder nor a partial one


def test_hub_snapshot_tries_three_times_with_backoff_then_fails_clearly(monkeypatch, tmp_path):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    attempts, waits = [], []

    def failing(**kwargs):
        attempts.append(kwargs)
        raise OSError("network unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing)
    monkeypatch.setattr(time, "sleep", waits.append)
    monkeypatch.setenv("HF_TOKEN", "hf_token_from_env")
    with pytest.raises(ModelError, match="o/r@main: download failed 3 times: network unreachable"):
        dl.hub_snapshot("o/r", "main", tmp_path, retries=3)
    assert len(attempts) == 3 and waits == [5, 10]  # one retry layer: 3 tries, not 3 per rule attempt
    assert attempts[0]["token"] == "hf_token_from_env"
    assert "model.safetensors" in attempts[0]["allow_patterns"] and attempts[0]["revision"] == "main"


def test_hub_snapshot_succeeds_on_a_later_try(monkeypatch, tmp_path):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    attempts = []
    snapshot = tmp_path / "snapshots" / COMMIT

    def flaky(**kwargs):
        attempts.append(kwargs)
        if len(attempts) < 3:
            raise TimeoutError("read timed out")
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", flaky)
    monkeypatch.setattr(time, "sleep", lambda s: None)
    assert dl.hub_snapshot("o/r", COMMIT, tmp_path, retries=5) == (snapshot, COMMIT) and len(attempts) == 3


# ---------------------------------------------------------------------------------------------- verification
@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda d: _flip_byte(d / "model.safetensors", at=-1), "model.safetensors sha256 .* differs"),  # a weight
        (lambda d: _edit(d / "tokenizer.json", "<|im_end|>", "<|im_END|>"), "tokenizer.json sha256 .* differs"),
        (lambda d: (d / "chat_template.jinja").unlink(), "chat_template.jinja is listed in .* but missing"),
        (lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-8]), "truncated"),
        (lambda d: (d / "generation_config.json").write_text("{}"), "generation_config.json has 2 bytes"),
        (lambda d: (d / MANIFEST_NAME).unlink(), f"missing {MANIFEST_NAME}: not a completed model stage output"),
        (lambda d: (d / "pytorch_model.bin").write_bytes(b"x"), "not in brorl_manifest.json: pytorch_model.bin"),
    ],
)
def test_verify_detects_every_kind_of_damage(base, tmp_path, damage, words):
    model = private_copy(base, tmp_path / "model")
    verify_model_dir(model)
    damage(model)
    with pytest.raises(ModelError, match=words):
        verify_model_dir(model)


def _flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _edit(path: Path, old: str, new: str) -> None:
    """A same-size edit that keeps the file valid (only the checksum can tell)."""
    path.write_text(path.read_text().replace(old, new, 1))


def test_verify_cli_says_ok_or_names_the_problem(base, tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "brorl.models", "verify", str(base)], env=ENV, capture_output=True, text=True
    )
    assert ok.returncode == 0 and "OK, 6 files" in ok.stdout, ok.stderr
    model = private_copy(base, tmp_path / "model")
    _flip_byte(model / "model.safetensors", at=-1)
    bad = subprocess.run(
        [sys.executable, "-m", "brorl.models", "verify", str(model)], env=ENV, capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.startswith(f"error: {model}: model.safetensors sha256"), bad.stderr


# ------------------------------------------------------------------------------------------- context extension
def test_extension_within_positions_raises_limits_and_runs_at_the_target_length(base, tmp_path):
    out = tmp_path / "tiny-qwen2-ctx256"
    manifest = extend_context(base, out, POSITIONS)
    config, base_config = (json.loads((d / "config.json").read_text()) for d in (out, base))
    assert config == base_config  # RoPE already covers 256 positions: nothing in config.json moves
    assert json.loads((out / "tokenizer_config.json").read_text())["model_max_length"] == POSITIONS
    assert json.loads((base / "tokenizer_config.json").read_text())["model_max_length"] == BASE_CONTEXT
    assert json.loads((out / "generation_config.json").read_text())["max_length"] == POSITIONS
    ext, check = manifest["extension"], manifest["forward_check"]
    assert ext["method"] == "within_positions" and ext["changes"]["tokenizer_config.json"] == {
        "model_max_length": [BASE_CONTEXT, POSITIONS]
    }
    assert check["tokens"] == POSITIONS and check["max_position_id"] == POSITIONS - 1
    assert check["finite_logits"] is True and check["vocab_logits"] == 320 and check["forward_s"] > 0
    assert (out / "model.safetensors").stat().st_ino == (base / "model.safetensors").stat().st_ino  # hard link
    assert manifest["source"]["manifest_hash"] and verify_model_dir(out)["stage"] == "extend_context"


def test_yarn_extends_beyond_the_positions_and_transformers_builds_it(base, tmp_path):
    length = 2 * POSITIONS
    manifest = extend_context(base, tmp_path / "ctx", length, rope_scaling="yarn")
    config = json.loads((tmp_path / "ctx" / "config.json").read_text())
    assert config["max_position_embeddings"] == length
    assert config["rope_scaling"] == {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": POSITIONS}
    assert config["rope_parameters"] == {**config["rope_scaling"], "rope_theta": 10000.0}
    check = manifest["forward_check"]
    assert check["rope_type_loaded"] == "yarn" and check["max_position_id"] == length - 1 and check["finite_logits"]


def test_extension_refuses_lengths_the_architecture_cannot_reach(base, tmp_path):
    with pytest.raises(
        ContextError,
        match=f"{2 * POSITIONS} tokens exceed max_position_embeddings = {POSITIONS} and no RoPE scaling is allowed",
    ):
        extend_context(base, tmp_path / "ctx", 2 * POSITIONS)
    assert not (tmp_path / "ctx").exists()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "brorl.models",
            "extend-context",
            "--base",
            str(base),
            "--length",
            str(4 * POSITIONS),
            "--out",
            str(tmp_path / "ctx"),
        ],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "cannot extend to 1024 tokens" in proc.stderr, proc.stderr
    unverified = private_copy(base, tmp_path / "nomanifest")
    (unverified / MANIFEST_NAME).unlink()
    with pytest.raises(ModelError, match="missing brorl_manifest.json"):
        extend_context(unverified, tmp_path / "ctx", POSITIONS)


QWEN = {
    "model_type": "qwen2",
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "use_sliding_window": False,
    "sliding_window": 4096,
}


@pytest.mark.parametrize(
    "config, length, scaling, words",
    [
        (
            {"model_type": "gpt2", "n_positions": 1024, "max_position_embeddings": 1024},
            2048,
            "yarn",
            "no RoPE settings",
        ),
        (
            {**QWEN, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}},
            8192,
            "yarn",
            "already scaled",
        ),
        ({**QWEN, "rope_scaling": {"type": "ntk-by-parts", "factor": 2.0}}, 1024, None, "unknown RoPE type"),
        ({**QWEN, "use_sliding_window": True}, 4096 + 1, "linear", r"sliding-window attention \(4096 tokens\)"),
        ({**QWEN, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}, 1024, None, "disagrees"),
        ({**QWEN, "max_position_embeddings": None}, 1024, None, "no valid max_position_embeddings"),
        (QWEN, 8192, "ntk", "unknown RoPE scaling 'ntk'"),
    ],
)
def test_plan_refuses_with_the_reason(config, length, scaling, words):
    with pytest.raises(ContextError, match=words):
        plan_extension(config, length, scaling)


def test_plan_for_the_paper_model_changes_no_rope():
    """The R1-distilled Qwen2 1.5B declares 131,072 positions (RoPE theta 1e4, sliding window off): 17,408 and
    33,792 tokens need no scaling, only the tokenizer and generation limits."""
    paper = {**QWEN, "max_position_embeddings": 131072, "use_sliding_window": False}
    for length in (1024 + 16384, 1024 + 32768):
        plan = plan_extension(paper, length, None)
        assert plan.method == "within_positions" and plan.config_updates == {}
    linear = plan_extension(QWEN, 8192, "linear")
    assert linear.config_updates["rope_scaling"] == {"rope_type": "linear", "factor": 2.0}


# --------------------------------------------------------------------------------------------------- workflow
@pytest.mark.workflow
def test_dry_run_of_the_paper_config_stages_and_extends_the_start_model(tmp_path):
    cfg = load_yaml_config(CONFIG)
    env_token = os.environ.get("HF_TOKEN")
    os.environ["HF_TOKEN"] = "hf_never_in_the_output"
    try:
        proc = snakemake("-n", "--directory", tmp_path)
    finally:
        os.environ.pop("HF_TOKEN") if env_token is None else os.environ.__setitem__("HF_TOKEN", env_token)
    text = output_of(proc)
    assert proc.returncode == 0, text
    counts = job_counts(proc)
    assert counts["download_base_model"] == 1 and counts["extend_context"] == 2
    name = cfg["base_model"]["repo_id"].split("/")[-1]
    ctx = cfg["context"]
    for budget in (ctx["train_max_len"], ctx["eval_max_len"]):
        assert f"resources/models/{name}-ctx{ctx['prompt_max_len'] + budget}" in text
    assert f"--repo-id {cfg['base_model']['repo_id']}" in text and "--local" not in text
    assert f"--revision {cfg['base_model']['revision']}" in text and "--allow-unpinned" not in text  # a 40-hex pin
    assert "hf_never_in_the_output" not in text


@pytest.mark.slow
@pytest.mark.workflow
def test_tiny_model_rules_run_for_real_then_are_up_to_date(tmp_path):
    repo = copy_workflow(tmp_path / "repo")
    cfg = load_yaml_config(CONFIG, TINY)
    ctx = cfg["context"]
    lengths = [ctx["prompt_max_len"] + ctx[k] for k in ("train_max_len", "eval_max_len")]
    targets = [f"resources/models/tiny-qwen2-ctx{n}" for n in lengths]
    override = write_yaml(tmp_path / "small.yaml", {"simulation": {"enabled": False}, **SHORT_WARM_START})
    args = ("--cores", "2", "--directory", tmp_path, "--configfile", TINY, override)
    proc = snakemake(*targets, *args, cwd=repo)
    assert proc.returncode == 0, output_of(proc)[-6000:]
    assert job_counts(proc) == {
        "build_tiny_model": 1,
        "warm_start_tiny_model": 1,
        "download_base_model": 1,
        "extend_context": 2,
    }
    base = verify_model_dir(tmp_path / "resources/models/tiny-qwen2")
    assert base["source"]["manifest"]["build"]["context_length"] == ctx["prompt_max_len"] + ctx["base_max_len"]
    for target, length in zip(targets, lengths):
        manifest = verify_model_dir(tmp_path / target)
        assert manifest["forward_check"]["tokens"] == length and manifest["forward_check"]["finite_logits"]
        assert json.loads((tmp_path / target / "tokenizer_config.json").read_text())["model_max_length"] == length
    assert (tmp_path / "results/timings/extend_context" / f"ctx{lengths[1]}.tsv").is_file()
    again = snakemake(*targets, *args, cwd=repo)
    assert again.returncode == 0 and "Nothing to be done" in output_of(again), output_of(again)
