"""``python -m brorl.throughput``: see cli.py."""

from .cli import main

main()
