"""python -m brorl.hub.pin_resolve [--configfile ...] [--lock pins.lock.yaml]: resolve every unpinned hub branch of the
run's config keys to its commit now and write the lock the workflow reads (brorl.hub.pin_lock; `make pin`). For each
model commit of the run, and for the start repository's v2 branch, it also records what the commit holds (the
safetensors' sha256 and the model card's training-step sentence: brorl.hub.checkpoint_identity) and says whether the
start pin is the v2 model the paper starts from."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import yaml

from ..benchmarks.registry import load_registry
from ..config import load_yaml_config
from .checkpoint_identity import PAPER_START_BRANCH, PAPER_START_REPO, fetch_identity, identity_key, start_verdict
from .pin_lock import LOCK_NAME, ROOT, hub_commit, lock_key, read_identity, read_lock, resolve
from .pins import HubSource, hub_sources, is_pinned


def _tried(sources: list[HubSource]) -> str:
    """What `make pin` asks the hub: each unpinned branch of a config key, and each model commit's files and card."""
    lines = [
        f"  - the commit of {s.repo_id}@{s.revision or 'main'} ({s.config_key})"
        for s in sources
        if not is_pinned(s.revision) and not s.config_key.endswith("(sources: kind hub: revision)")
    ]
    lines += [
        f"  - the safetensors sha256 and model card of {s.repo_id}@{s.revision} ({s.config_key})"
        for s in sources
        if s.repo_type == "model" and is_pinned(s.revision)
    ]
    return "\n".join(lines) or "  (nothing)"


def model_commits(sources: list[HubSource], pins: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{identity key: (repo, commit)} of every model source once pinned, and of the start repository's v2 branch."""
    commits = {}
    for s in sources:
        if s.repo_type == "model":
            commit = s.revision if is_pinned(s.revision) else pins.get(lock_key("model", s.repo_id, s.revision))
            if commit:
                commits[identity_key(s.repo_id, commit)] = (s.repo_id, commit)
    v2 = pins.get(lock_key("model", PAPER_START_REPO, PAPER_START_BRANCH))
    if v2:
        commits[identity_key(PAPER_START_REPO, v2)] = (PAPER_START_REPO, v2)
    return commits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brorl.hub.pin_resolve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", type=Path, default=[], help="presets merged over config.yaml")
    parser.add_argument("--lock", type=Path, default=ROOT / LOCK_NAME)
    a = parser.parse_args(argv)
    config = load_yaml_config(ROOT / "config.yaml", *a.configfile)
    sources = hub_sources(config, load_registry(), lambda name: True, training=True)
    if any(s.repo_id == PAPER_START_REPO for s in sources):  # the paper's start model, to compare the pin with
        sources.append(HubSource("the paper's start, v2", PAPER_START_REPO, PAPER_START_BRANCH, "model"))
    previous = read_identity(a.lock)
    try:
        found = resolve(sources, hub_commit)
        pins = {**read_lock(a.lock), **found}
        identities = {
            key: previous.get(key) or fetch_identity(repo, commit)
            for key, (repo, commit) in model_commits(sources, pins).items()
        }
    except Exception as error:  # no network, a gated repository, a branch that does not exist
        args = f' PIN_ARGS="--configfile {" ".join(map(str, a.configfile))}"' if a.configfile else ""
        print(
            f"error: the hub did not answer ({type(error).__name__}: {str(error)[:300]}).\nIt asked for:\n"
            f"{_tried(sources)}\nWhere the hub is reachable (HF_TOKEN set for gated repositories), run in a checkout "
            f"of this repository:\n  make pin{args}\nand copy its {LOCK_NAME} here ({shlex.quote(str(a.lock))}).",
            file=sys.stderr,
        )
        return 1
    header = (
        f"# Written by `make pin` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: each hub branch of the run "
        "resolved to its commit, and what each model commit holds (safetensors sha256, the card's step sentence).\n"
        "# The workflow reads this file (brorl.hub.pin_lock); commit it with the run.\n"
    )
    data = {"pins": dict(sorted(pins.items())), "identity": {**previous, **identities}}
    a.lock.write_text(header + yaml.safe_dump(data, sort_keys=False))
    for key, commit in found.items():
        print(f"pinned {key} -> {commit}")
    for key, ident in identities.items():
        print(f"{key}: {len(ident['weights'])} safetensors file(s); card: {ident['card_steps'] or 'no step sentence'}")
    base = config["base_model"]
    if base.get("repo_id") == PAPER_START_REPO and not base.get("local_path"):
        start = (
            base["revision"]
            if is_pinned(base["revision"])
            else pins.get(lock_key("model", PAPER_START_REPO, base["revision"]))
        )
        v2 = pins.get(lock_key("model", PAPER_START_REPO, PAPER_START_BRANCH))
        print(f"start checkpoint: {start_verdict(start, v2, data['identity'])[1]}")
    print(f"{len(found)} source(s) pinned in {a.lock}" if found else f"nothing to pin: {a.lock} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
