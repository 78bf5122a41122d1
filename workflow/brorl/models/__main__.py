"""``python -m brorl.models``: see cli.py."""

from .cli import main

main()
