"""Every figure-writing function says how many of the run's data points it drew (brorl.reporting.figure_points), so an empty
plot is reported rather than shipped: the simulation's Figure 3 and N grid and the throughput figure here (the
analysis figures are checked in tests/analysis through figures.json)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from brorl.reporting.figure_points import plotted_points, report_points  # noqa: E402


def test_data_lines_and_scatter_count_reference_lines_and_paper_points_do_not():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2, 3], [4, 5, 6])  # 3 data points
    a.axhline(0.0)  # a reference line in axis coordinates
    a.axvline(2.0)
    a.plot([0, 10], [50, 60], "s--", label="paper: BroRL (N=512)")  # the paper's, not this run's
    b.scatter([1, 2], [3, 4])  # 2 data points
    b.fill_between([1, 2], [0, 0], [1, 1])  # a band, not points
    assert plotted_points(fig) == 5
    plt.close(fig)
    empty, _ = plt.subplots()
    assert plotted_points(empty) == 0
    plt.close(empty)


def test_an_empty_figure_is_reported_on_stderr(capsys):
    assert report_points("Figure X", 0, "x.png") == 0
    assert "warning: Figure X drew no data points (x.png is an empty plot)" in capsys.readouterr().err
    report_points("Figure X", 7, "x.png")
    assert "Figure X: 7 data points -> x.png" in capsys.readouterr().out


def test_the_throughput_figure_counts_its_points_and_an_empty_frame_draws_none(tmp_path):
    from brorl.throughput.figure import plot_samples_per_s

    frame = pd.DataFrame(
        {
            "n": [4, 16, 4, 16],
            "prompts": [8, 2, 8, 2],
            "samples": [32, 32, 32, 32],
            "prefix caching": ["on", "on", "off", "off"],
            "median": [10.0, 12.0, 9.0, 11.0],
            "min": [9.0, 11.0, 8.0, 10.0],
            "max": [11.0, 13.0, 10.0, 12.0],
            "trusted": [True, False, True, True],
        }
    )
    drawn = plot_samples_per_s(frame, "2-core CPU", tmp_path / "t.png", tmp_path / "t.pdf")
    assert drawn >= 8  # two lines of two N each, and their markers
    assert plot_samples_per_s(frame.iloc[:0], "2-core CPU", tmp_path / "e.png", tmp_path / "e.pdf") == 0


def test_the_simulation_n_grid_counts_its_points(tmp_path):
    from brorl.simulation.n_grid import plot_n_grid

    table = pd.DataFrame({"N": [4, 16, 64], "gain": [0.001, 0.004, 0.006]})
    verdict = {"monotonic": True, "concave_in_log_n": True, "first_non_concave_N": None}
    assert plot_n_grid(table, verdict, [16], tmp_path / "g.png", tmp_path / "g.pdf") == 3 + 1  # line + marked N
