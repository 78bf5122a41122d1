"""``python -m brorl.probe``: see cli.py (the process leaves without interpreter teardown: brorl.cli.leave)."""

from ..cli import run_as_program
from .cli import main

run_as_program(main)
