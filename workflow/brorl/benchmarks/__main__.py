"""``python -m brorl.benchmarks``: see cli.py."""

from .cli import main

main()
