"""``python -m brorl.simulation``: see cli.py."""

from .cli import main

main()
