"""What many test modules share: the checkout's paths, running the venv's Snakemake and reading its output, a private
copy of the workflow to edit, and (for the cluster tests) the local Slurm and its driver environment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's snakemake, snakefmt and shfmt; rules run `python -m brorl...` from it
CONFIG = ROOT / "config.yaml"
TINY = ROOT / "workflow" / "presets" / "tiny.yaml"
# the extension presets: each adds its arms (extra_arms.<preset>) to config.yaml's two; all four combine
EXTENSIONS = [
    ROOT / "workflow" / "presets" / f"{n}.yaml" for n in ("n_sweep", "algorithms", "lr_ablation", "n_sweep_prompts")
]
# Subprocesses import the checkout's package, installed or not.
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}


def snakemake(
    *args: str | Path, cwd: Path = ROOT, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run the venv's snakemake with the venv first on PATH (jobs call `python -m brorl...`, snakefmt calls shfmt);
    ``env``: variables set on top of this process's environment."""
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")]), **(env or {})}
    return subprocess.run(
        [str(BIN / "snakemake"), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def output_of(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def job_counts(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """The 'Job stats' table of a dry run as {rule: count} (without the total)."""
    text = output_of(proc)
    assert "Job stats:" in text, text
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.M)}
    total = counts.pop("total")
    assert total == sum(counts.values())
    return counts


def copy_workflow(dest: Path) -> Path:
    """A private copy of the workflow (Snakefile, config, its own brorl package, profiles, envs) at `dest`, so that a
    test may edit code or config without touching the checkout."""
    # the rerun derivation's cache comes along (keyed by path under workflow/ and file version: copytree keeps both)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("workflow", "profiles", "envs"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


# For tests of the pipeline, not of the tiny model's skill (nothing trains on it): the warm start's 300 steps, about
# 90 s on 2 cores, become 10; the rule still runs. Tests that train (the rehearsal, the demo) keep the preset's.
SHORT_WARM_START = {"base_model": {"embedded_model": {"warm_start": {"steps": 10}}}}


def write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ------------------------------------------------------------------------------------ the local Slurm (tests/cluster)
DRIVER = ROOT / ".venv-slurm" / "bin" / "python"  # snakemake + the slurm executor plugin (numpy >= 2.4.5)
# `python -m snakemake` of the driver environment with the plugin's status polling capped (tests/slurm_driver.py)
DRIVER_SNAKEMAKE = [str(DRIVER), str(Path(__file__).resolve().parent / "slurm_driver.py")]
# The emulated nodes are smaller than H100 nodes: the production profile reads these overrides.
CI_SITE = {
    "BRORL_SLURM_GPU_NODE_CPUS": "16",
    "BRORL_SLURM_GPU_NODE_MEM_MB": "64000",
    "BRORL_SLURM_GPUS_PER_NODE": "1",  # one vLLM CPU engine per generation job on a 2-core host
    "BRORL_SLURM_RAY_EMULATED": "auto",  # the emulated nodes share this host (production: 0)
    "BRORL_SLURM_CPU_ENGINES": "1",  # their GPU jobs run vLLM's CPU build on purpose (production: refused)
}
# The paper's production settings on the emulated nodes: their sizes, 8 GPUs per node as the paper's; where the
# local Slurm answers sinfo, every request of the paper is checked against it and fits (vLLM's CPU build refused)
PAPER_ON_CI = {k: v for k, v in CI_SITE.items() if k != "BRORL_SLURM_CPU_ENGINES"} | {"BRORL_SLURM_GPUS_PER_NODE": "8"}


def slurm_up() -> str | None:
    """None when a local Slurm answers with accounting, else why not."""
    if shutil.which("sbatch") is None:
        return "Slurm is not installed (as root on Debian: make slurm-up)"
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    if "UP" not in ping.stdout:
        return "slurmctld is not running (make slurm-up)"
    if subprocess.run(["sacct", "-n", "-X", "-S", "now"], capture_output=True).returncode:
        return "sacct does not answer (slurmdbd not running)"
    return None


def copy_slurm_workflow(dest: Path) -> Path:
    copy_workflow(dest)
    (dest / "slurm").symlink_to("profiles/slurm")
    return dest


def sacct(*args: str) -> list[list[str]]:
    proc = subprocess.run(["sacct", "-n", "-P", *args], capture_output=True, text=True, check=True)
    return [line.split("|") for line in proc.stdout.splitlines() if line]


def wandb_runs(folder: Path) -> list[dict]:
    """Every offline W&B run under `folder`, read from its transaction log (run-<id>.wandb) with wandb's own reader
    (`wandb leet inspect --json`): {"run": name, group, project, config..., "history": [(step, logged values)],
    "exit_code": ...}, in the order the runs started."""
    import json

    runs = []
    for path in sorted(Path(folder).rglob("run-*.wandb")):
        proc = subprocess.run(
            [str(BIN / "wandb"), "leet", "inspect", "--json", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        records = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        history = [
            (int(r["history"]["step"]["num"]), {k: v for k, v in r["history"]["item"].items() if not k.startswith("_")})
            for r in records
            if r["type"] == "history"
        ]
        exits = [r["exit"].get("exit_code", 0) for r in records if r["type"] == "exit"]
        run = next(r["run"] for r in records if r["type"] == "run")
        runs.append({"run": run, "history": history, "exit_code": exits[-1] if exits else None, "file": path})
    return sorted(runs, key=lambda r: r["run"]["start_time"])


R1_TEMPLATE = (
    "{{ bos_token }}{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}{{ '<｜User｜>' + message['content'] }}"
    "{%- else %}{{ '<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<｜Assistant｜><think>\\n' }}{%- endif %}"
)
"""The shape of the DeepSeek-R1-Distill chat template: BOS, user and assistant markers, and a generation prompt that
opens the reasoning block itself."""


def r1_style_tokenizer():
    """The tiny byte-level tokenizer with R1-distill's special tokens and template (BOS, EOS, turn markers)."""
    from brorl.models.tiny import build_tokenizer

    tokenizer = build_tokenizer(1024)
    tokenizer.add_special_tokens(
        {
            "bos_token": "<｜begin▁of▁sentence｜>",
            "eos_token": "<｜end▁of▁sentence｜>",
            "additional_special_tokens": ["<｜User｜>", "<｜Assistant｜>"],
        }
    )
    tokenizer.chat_template = R1_TEMPLATE
    return tokenizer


def paper_config(*presets: Path) -> dict:
    """config.yaml (with these presets merged over it) with the schema's defaults filled in, as the Snakefile sees
    it."""
    from brorl.config import load_yaml_config

    return load_yaml_config(CONFIG, *presets)


@contextmanager
def http_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A local HTTP server answering with `handler` in a thread; yields its base URL (http://127.0.0.1:<port>)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------------------- the parsed workflow (Snakemake API)
WORKFLOW_QUERY = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(cores=1),
        config_settings=ConfigSettings(configfiles=[Path(p) for p in sys.argv[3:]]),
        snakefile=Path("Snakefile").resolve(),
        workdir=Path(sys.argv[1]),
    )
    print(json.dumps(eval(sys.argv[2], {"wf": workflow._workflow})))
"""


def workflow_query(workdir: Path, expression: str, *configfiles: Path) -> object:
    """`expression` (JSON-able) evaluated on the workflow Snakemake parses with these config files (`wf`: its
    Workflow object), through Snakemake's own API in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", WORKFLOW_QUERY, str(workdir), expression, *map(str, configfiles)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
