"""What the rerun derivation learns about each source file, kept across processes by file version (size and
modification time, as Python's own bytecode cache does): the DAG and every job parse the Snakefile again, and most
files are unchanged between runs. Three files: each source's syntax facts (large: read only when a closure must be
derived again), each file's digest (small), and each command's derived sources for the current version of every file
under workflow/ (small: a parse of an unchanged checkout reads only the last two). Only a speed-up: an unreadable or
unwritable cache file is ignored, and BRORL_NO_SOURCE_CACHE=1 computes everything afresh."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# beside the sources it describes (git ignores it)
CACHE_PATH = Path(__file__).resolve().parents[2] / ".cache" / "source_facts.json"
DIGESTS_PATH = CACHE_PATH.with_name("source_digests.json")
CLOSURES_PATH = CACHE_PATH.with_name("source_closures.json")
NO_CACHE_ENV = "BRORL_NO_SOURCE_CACHE"
FORMAT = 3  # bumped when what is cached changes shape or meaning


def _key(path: Path) -> str:
    """A file's key: its path under workflow/ where it lies there, so that a copy of the workflow that keeps the files'
    modification times (``shutil.copytree``, ``cp -p``, a test's copy) reads the same cache; else its absolute path."""
    try:
        return path.relative_to(CACHE_PATH.parents[1]).as_posix()
    except ValueError:
        return str(path)


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
        key, version = _key(path), [stat.st_mtime_ns, stat.st_size]
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


_STORES: dict[Path, SourceCache] = {}


def _store(path: Path) -> SourceCache:
    if path not in _STORES:
        _STORES[path] = SourceCache(path if os.environ.get(NO_CACHE_ENV) != "1" else None)
    return _STORES[path]


def cached(path: Path, kind: str, compute: Callable[[Path], Any]) -> Any:
    """``compute(path)`` (JSON-serialisable), kept per file version and kind (syntax facts apart from the rest)."""
    return _store(CACHE_PATH if kind.startswith("facts") else DIGESTS_PATH).get(path, kind, compute)


def tree_version(root: Path) -> str:
    """A digest of the version (path, modification time, size) of every file under ``root`` but caches: any edit,
    added or removed file changes it."""
    versions = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in ("__pycache__", ".cache"))
        for name in sorted(files):
            stat = os.stat(os.path.join(folder, name))
            versions.append(f"{os.path.relpath(os.path.join(folder, name), root)} {stat.st_mtime_ns} {stat.st_size}")
    return hashlib.sha256("\n".join(versions).encode()).hexdigest()


def cached_closure(root: Path, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` (JSON-serialisable) for a command ``key``, kept while no file under ``root`` changes (the
    values kept for an older version of the tree are dropped)."""
    store, version = _store(CLOSURES_PATH), _root_version(root)
    entry = store.entries.get(_key(root))
    if entry is None or entry[0] != version:
        entry = store.entries[_key(root)] = [version, {}]
    if key not in entry[1]:
        entry[1][key] = compute()
        store.dirty = True
    return entry[1][key]


_VERSIONS: dict[Path, str] = {}


def _root_version(root: Path) -> str:
    if root not in _VERSIONS:  # once per process: files do not change while the Snakefile is parsed
        _VERSIONS[root] = tree_version(root)
    return _VERSIONS[root]


def save_cache() -> None:
    """Write what this process learned to the cache files (once, after the DAG's derivation)."""
    for store in _STORES.values():
        store.save()
