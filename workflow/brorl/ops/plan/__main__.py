"""``python -m brorl.ops.plan``: see cli.py."""

from .cli import main

main()
