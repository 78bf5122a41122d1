"""The analysis stage: per-instance units from evaluation scores, the paper's significance test at equal training
time, Tables 1 and 3-5 beside the paper's values, Figures 1 and 4, the N-sweep figure and results/SUMMARY.md.

CLI: ``python -m brorl.analysis {units,significance,tables,figures,summary}`` (see ``brorl.analysis.cli``).
"""
