"""pytest's shared setup: the tests' own helpers (tests/helpers.py) are importable from every test folder, and the
order that lets `make test` run the suite on several pytest-xdist workers.

Markers (declared in pyproject.toml): `workflow` starts Snakemake, `engine` starts vLLM or a trainer, `slurm` needs the
local Slurm, `slow` takes minutes. `make test-fast` runs the rest, the edit loop; `make test` runs everything.

Workers (`-n 3 --dist loadscope --no-loadscope-reorder`, docs/testing.md#how-the-suite-runs-in-parallel): every test
module is one unit that runs on one worker, so a module's fixtures are built once; the units that take minutes are
handed out first so that none of them starts last. (pytest-xdist's `loadgroup` cannot be used: with pytest 9 it no
longer sees the group marks, because xdist 3.8 renames `item._nodeid`, which pytest 9 no longer reads.)
"""

import sys
from pathlib import Path

import pytest

try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest without pytest-xdist: no workers to schedule
    LoadScopeScheduling = None

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

# The modules that take longest, longest first (measured: docs/testing.md#what-the-suite-costs). Every other module
# with a `slurm` or `slow` test follows them, then the rest in collection order.
LONGEST_FIRST = (
    "tests/cluster/test_rehearsal.py",
    "tests/training/test_embedded.py",
    "tests/evaluation/test_evaluation.py",
    "tests/test_envs.py",
    "tests/cluster/test_slurm.py",
)


# Modules that run on another module's worker, after it. The demo-sized learning run and the OpenRLHF rehearsal each
# keep both cores busy with vLLM, the trainer and Ray; side by side on two workers they slowed each other and the
# rest of the suite far beyond their sum (rehearsal 2,618 s instead of ~760 s, the suite 48 minutes in CI).
SAME_WORKER = {"tests/training/test_learning.py": "tests/cluster/test_rehearsal.py"}


def module_of(item) -> str:
    """The unit pytest-xdist's loadscope hands to one worker: the test's module."""
    return item.nodeid.split("::", 1)[0]


def rank_of(module: str, slow_modules: set[str]) -> tuple[int, int]:
    """Sort key of a module: the measured longest first, then the other slow ones, then the rest."""
    if module in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(module))
    return (1, 0) if module in slow_modules else (2, 0)


def pytest_collection_modifyitems(items):
    """Mark vLLM users and put the long modules first (the same order on every worker)."""
    for item in items:
        # a test that takes the `engine` fixture (a vLLM engine, in tests/generation and tests/throughput) starts vLLM
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)
    slow = {module_of(i) for i in items if i.get_closest_marker("slow") or i.get_closest_marker("slurm")}
    items.sort(key=lambda i: rank_of(module_of(i), slow))  # stable: collection order within each rank


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or the module it shares a worker with (SAME_WORKER)."""
    module = nodeid.split("::", 1)[0]
    return SAME_WORKER.get(module, module)


if LoadScopeScheduling is not None:

    class ModuleUnits(LoadScopeScheduling):
        """loadscope with modules as units (SAME_WORKER merged), and a worker on a merged unit gets no other unit
        until it reaches that unit's last test (loadscope hands out a second unit to any worker with <= 2 pending)."""

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _reschedule(self, node) -> None:
            merged = set(SAME_WORKER.values())
            for unit, tests in self.assigned_work.get(node, {}).items():
                if unit in merged and list(tests.values()).count(False) > 1:
                    return
            super()._reschedule(node)

    def pytest_xdist_make_scheduler(config, log):
        """`make test`'s `--dist loadscope` with the units above; any other mode keeps pytest-xdist's own."""
        return ModuleUnits(config, log) if config.getvalue("dist") == "loadscope" else None
