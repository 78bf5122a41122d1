"""Which rules run on the machine of the Snakemake driver (local rules): at paper scale the bookkeeping rules that
add up to CPU-hours (693 summarize_evaluation jobs, 32 export_checkpoint hashes) are Slurm CPU jobs, so nothing
heavy runs on a login node; at tiny scale they stay local, so the CI's Slurm tests and the demo do not grow."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import CONFIG, ROOT, TINY

LOCAL_RULES = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(p) for p in sys.argv[2:]]),
            snakefile=Path("Snakefile").resolve(),
            workdir=Path(sys.argv[1]),
        )
        print(" ".join(sorted(workflow._workflow._localrules)))
    """
)


def local_rules(tmp_path, *configfiles) -> set[str]:
    """The local rules of the workflow parsed with these config files (Snakemake's own API)."""
    proc = subprocess.run(
        [sys.executable, "-c", LOCAL_RULES, str(tmp_path), *map(str, configfiles)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return set(proc.stdout.split())


@pytest.mark.workflow
def test_heavy_bookkeeping_is_a_slurm_job_at_paper_scale_and_local_at_tiny_scale(tmp_path):
    heavy = {"summarize_evaluation", "export_checkpoint"}
    paper = local_rules(tmp_path / "paper", CONFIG)
    assert not heavy & paper and {"collect_evaluation", "download_base_model", "all"} <= paper
    assert heavy <= local_rules(tmp_path / "tiny", CONFIG, TINY)
