"""Which jobs rerun when code changes: rule triggers derived from the code each command runs, and stale-code notes."""
