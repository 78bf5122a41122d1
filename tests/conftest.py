"""pytest's shared setup: the tests' own helpers (tests/helpers.py) are importable from every test folder, and the
order and grouping that let `make test` run the suite on several pytest-xdist workers.

Markers (declared in pyproject.toml): `workflow` starts Snakemake, `engine` starts vLLM or a trainer, `slurm` needs the
local Slurm, `slow` takes minutes. `make test-fast` runs the rest, the edit loop; `make test` runs everything.

Workers (`-n 3 --dist loadgroup --no-loadscope-reorder`, docs/testing.md#how-the-suite-runs-in-parallel): the units
that take minutes are handed out first so that none of them starts last. Each test is marked with an xdist group (its
module; one group for the local-Slurm tests), which the measured run did not honour (the docs say what that costs).
"""

import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

SLURM_GROUP = "local-slurm"


def unit_of(item) -> str:
    """The xdist group of a test: the local Slurm's group for `slurm` tests, else its module."""
    return SLURM_GROUP if item.get_closest_marker("slurm") else item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group markers
def pytest_collection_modifyitems(items):
    """Mark vLLM users, group tests into units, and put the long units first (the same order on every worker)."""

    for item in items:
        # a test that takes the `engine` fixture (a vLLM engine, in tests/generation and tests/throughput) starts vLLM
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)
        item.add_marker(pytest.mark.xdist_group(unit_of(item)))
    slow_units = {unit_of(i) for i in items if i.get_closest_marker("slow")}
    rank = {SLURM_GROUP: 0, **{u: 1 for u in slow_units if u != SLURM_GROUP}}
    items.sort(key=lambda i: rank.get(unit_of(i), 2))  # stable: collection order within each rank
