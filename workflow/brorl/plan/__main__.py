"""``python -m brorl.plan``: see cli.py."""

from .cli import main

main()
