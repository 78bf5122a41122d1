"""What the rerun derivation learns about each source file, kept across processes by file version (size and
modification time, as Python's own bytecode cache does): the DAG and every job parse the Snakefile again, and most
files are unchanged between runs. Only a speed-up: an unreadable or unwritable cache file is ignored, and
BRORL_NO_SOURCE_CACHE=1 computes everything afresh."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# beside the sources it describes (git ignores it)
CACHE_PATH = Path(__file__).resolve().parents[2] / ".cache" / "source_facts.json"
NO_CACHE_ENV = "BRORL_NO_SOURCE_CACHE"
FORMAT = 2  # bumped when what is cached changes shape or meaning


class SourceCache:
    """file -> [mtime_ns, size, {kind: value}], read once per process, written back once."""

    def __init__(self, path: Path | None):
        self.path, self.entries, self.dirty = path, {}, False
        if path is not None:
            try:
                data = json.loads(path.read_text())
                self.entries = data["files"] if data.get("format") == FORMAT else {}
            except (OSError, ValueError, KeyError, TypeError):
                self.entries = {}

    def get(self, path: Path, kind: str, compute: Callable[[Path], Any]) -> Any:
        stat = path.stat()
        key, version = str(path), [stat.st_mtime_ns, stat.st_size]
        entry = self.entries.get(key)
        if entry is None or entry[:2] != version:
            entry = self.entries[key] = [*version, {}]
        if kind not in entry[2]:
            entry[2][kind] = compute(path)
            self.dirty = True
        return entry[2][kind]

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps({"format": FORMAT, "files": self.entries}))
            temporary.replace(self.path)  # atomic: a concurrent job never reads half a file
            self.dirty = False
        except OSError:
            pass


_CACHE: SourceCache | None = None


def cached(path: Path, kind: str, compute: Callable[[Path], Any]) -> Any:
    """``compute(path)`` (JSON-serialisable), kept per file version and kind."""
    global _CACHE
    if _CACHE is None:
        _CACHE = SourceCache(CACHE_PATH if os.environ.get(NO_CACHE_ENV) != "1" else None)
    return _CACHE.get(path, kind, compute)


def save_cache() -> None:
    """Write what this process learned to the cache file (once, after the DAG's derivation)."""
    if _CACHE is not None:
        _CACHE.save()
