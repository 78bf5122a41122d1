"""python -m brorl.pin_resolve [--configfile ...] [--lock pins.lock.yaml]: resolve every unpinned hub branch of the
run's config keys to its commit now and write the lock the workflow reads (brorl.pin_lock; `make pin`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

from .benchmarks.registry import load_registry
from .config import load_yaml_config
from .pin_lock import LOCK_NAME, ROOT, hub_commit, read_lock, resolve
from .pins import hub_sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brorl.pin_resolve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", type=Path, default=[], help="presets merged over config.yaml")
    parser.add_argument("--lock", type=Path, default=ROOT / LOCK_NAME)
    a = parser.parse_args(argv)
    config = load_yaml_config(ROOT / "config.yaml", *a.configfile)
    sources = hub_sources(config, load_registry(), lambda name: True, training=True)
    try:
        found = resolve(sources, hub_commit)
    except Exception as error:  # no network, a gated repository, a branch that does not exist
        print(
            f"error: the hub did not answer ({type(error).__name__}: {str(error)[:300]}). Where the hub is reachable, "
            f"run `python -m brorl.pin_resolve` in a checkout of this repository and copy its {LOCK_NAME} "
            "here (set HF_TOKEN for gated repositories).",
            file=sys.stderr,
        )
        return 1
    lock = {**read_lock(a.lock), **found}
    header = (
        f"# Written by `make pin` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: each hub branch of the run "
        "resolved to its commit.\n# The workflow reads this file (brorl.pin_lock); commit it with the run.\n"
    )
    a.lock.write_text(header + yaml.safe_dump({"pins": dict(sorted(lock.items()))}, sort_keys=False))
    for key, commit in found.items():
        print(f"pinned {key} -> {commit}")
    print(f"{len(found)} source(s) pinned in {a.lock}" if found else f"nothing to pin: {a.lock} unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
