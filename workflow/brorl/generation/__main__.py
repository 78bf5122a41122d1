"""``python -m brorl.generation``: see cli.py."""

from .cli import main

main()
