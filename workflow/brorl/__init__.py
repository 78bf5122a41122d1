"""BroRL reproduction suite: all logic of the Snakemake workflow lives in this package."""

__version__ = "0.1.0"
