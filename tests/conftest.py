"""pytest's shared setup: the tests' own helpers (tests/helpers.py) are importable from every test folder.

Markers (declared in pyproject.toml): `workflow` starts Snakemake, `engine` starts vLLM or a trainer, `slurm` needs the
local Slurm, `slow` takes minutes. `make test-fast` runs the rest, the edit loop; `make test` runs everything.
"""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def pytest_collection_modifyitems(items):
    """A test that takes the `engine` fixture (a vLLM engine, in tests/generation and tests/throughput) starts vLLM."""
    import pytest

    for item in items:
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)
