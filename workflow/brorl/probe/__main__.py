"""``python -m brorl.probe``: see cli.py."""

from .cli import main

main()
