"""``python -m brorl.evaluation``: see cli.py."""

from .cli import main

main()
