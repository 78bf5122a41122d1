"""What every stage writes beside its numbers: result tables (tables), where a result came from (provenance), the
count of a figure's data points (figure_points), and the list of a run's outputs for a person (outputs)."""
