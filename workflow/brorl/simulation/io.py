"""Reading and writing simulation runs: one parquet per run, its parameters in the file's metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

META_KEY = b"brorl.simulation"


def write_run(df: pd.DataFrame, meta: dict, path: str | Path) -> None:
    """Write the per-step table with ``meta`` (spec, label, provenance) as JSON in the schema metadata.

    Written to a temporary name first, so an interrupted job never leaves a half file that looks finished.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    tmp = path.with_name(path.name + ".part")
    pq.write_table(table, tmp)
    tmp.replace(path)


def read_run(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """The per-step table and its metadata (``spec``: SimulationSpec.as_dict(), ``label``: run family)."""
    table = pq.read_table(path)
    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    if "spec" not in meta:
        raise ValueError(f"{path}: not a simulation run (no '{META_KEY.decode()}' metadata)")
    return table.to_pandas(), meta


def read_runs(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate runs into one long table with columns label, n, seed, optimizer settings + per-step columns."""
    frames = []
    for path in paths:
        df, meta = read_run(path)
        spec = meta["spec"]
        opt = spec["optimizer"]
        frames.append(
            df.assign(
                label=meta.get("label", "main"),
                n=spec["n"],
                seed=spec["seed"],
                optimizer=opt["name"],
                lr=opt["lr"],
                eps=opt["eps"],
                weight_decay=opt["weight_decay"],
                vocab=spec["vocab"],
                correct=spec["correct"] + int(spec.get("anchor_correct", False)),
                anchor="correct" if spec.get("anchor_correct") else "incorrect",
                anchor_frozen=bool(spec.get("freeze_anchor", False)),
                path=str(path),
            )
        )
    if not frames:
        raise ValueError("no simulation runs given")
    return pd.concat(frames, ignore_index=True)
