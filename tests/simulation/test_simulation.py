"""The fast simulation engine against the straightforward autograd implementation, and its contracts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from brorl.simulation import COLUMNS, OptimizerSpec, SimulationError, SimulationSpec, simulate
from brorl.simulation.engine import _softmax
from brorl.simulation.io import read_run
from brorl.simulation.reference import simulate_reference, surrogate_loss
from brorl.simulation.slots import Slots
from scipy import stats

SMALL = dict(vocab=3000, correct=300, steps=40)


def _replay(spec: SimulationSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    draws = {}
    fast = simulate(spec, on_draws=lambda t, ids, cnt: draws.__setitem__(t, (ids, cnt)))
    return fast, simulate_reference(spec, replay=draws)


@pytest.mark.parametrize(
    "opt",
    [OptimizerSpec(), OptimizerSpec(weight_decay=0.01, eps=1e-10), OptimizerSpec("sgd", lr=50.0, weight_decay=0.1)],
    ids=["adamw", "adamw-wd-eps", "sgd"],
)
@pytest.mark.parametrize("n", [4, 64, 4096])
def test_same_draws_give_the_autograd_trajectory(n: int, opt: OptimizerSpec) -> None:
    """Closed-form gradient + pooled slots + fused AdamW == autograd + torch.optim on the dense vocabulary."""
    fast, ref = _replay(SimulationSpec(**SMALL, n=n, seed=7, optimizer=opt))
    np.testing.assert_allclose(fast["q_pos"], ref["q_pos"], rtol=1e-11, atol=0)
    np.testing.assert_allclose(fast["worst_drop"], ref["worst_drop"], rtol=1e-8, atol=1e-18)
    np.testing.assert_allclose(fast["pct_improved"], ref["pct_improved"], rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "anchor_correct, freeze",
    [(True, False), (True, True), (False, True)],
    ids=["correct-anchor", "correct-frozen-anchor", "frozen-anchor"],
)
@pytest.mark.parametrize("n", [4, 4096])
def test_the_anchor_settings_give_the_autograd_trajectory(n: int, anchor_correct: bool, freeze: bool) -> None:
    """A correct anchor counts as a correct token (Q_pos, % improved, worst drop); a frozen one never moves."""
    spec = SimulationSpec(
        **SMALL,
        n=n,
        seed=3,
        optimizer=OptimizerSpec(weight_decay=0.01),
        anchor_correct=anchor_correct,
        freeze_anchor=freeze,
    )
    fast, ref = _replay(spec)
    np.testing.assert_allclose(fast["q_pos"], ref["q_pos"], rtol=1e-11, atol=0)
    np.testing.assert_allclose(fast["worst_drop"], ref["worst_drop"], rtol=1e-8, atol=1e-18)
    np.testing.assert_allclose(fast["pct_improved"], ref["pct_improved"], rtol=0, atol=1e-9)


def test_a_correct_anchor_is_part_of_q_pos() -> None:
    plain = simulate(SimulationSpec(**SMALL, n=16, seed=1))
    correct = simulate(SimulationSpec(**SMALL, n=16, seed=1, anchor_correct=True))
    z = np.exp([5.0] + [0.0] * (3000 - 300 - 1) + [3.0] * 300)
    assert correct["q_pos"].iloc[0] == pytest.approx((z[0] + z[-300:].sum()) / z.sum(), rel=1e-12)
    assert correct["q_pos"].iloc[0] - plain["q_pos"].iloc[0] == pytest.approx(z[0] / z.sum(), rel=1e-12)


def test_with_a_correct_anchor_the_worst_drop_shrinks_with_n_at_paper_scale() -> None:
    """The paper's setting (d = 128,000, 1,000 AdamW steps) with the anchor as a correct token: the largest drop of a
    correct token over the run shrinks as N grows (measured: -1.2e-5 at N = 4, -3.7e-6 at 512, -1.2e-7 at 51,200)."""
    drops = {n: simulate(SimulationSpec(n=n, seed=0, anchor_correct=True)).worst_drop.min() for n in (4, 512, 51200)}
    assert drops[4] < drops[512] < drops[51200] < 0, drops
    assert drops[51200] > -1e-6 and drops[4] < -1e-5, drops


def test_closed_form_gradient_equals_autograd() -> None:
    """dL/dz = (p/N)(S - w) with w_k = n_k (R_k - b) is the autograd gradient of the linear surrogate."""
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.normal(size=500), requires_grad=True)
    rewards = torch.where(torch.arange(500) >= 450, 1.0, -1.0).double()
    idx = torch.from_numpy(rng.integers(0, 500, size=64))
    p = torch.softmax(z, 0)
    surrogate_loss(p, idx, rewards).backward()
    counts = np.bincount(idx.numpy(), minlength=500).astype(float)
    pn = p.detach().numpy()
    w = counts * (rewards.numpy() - rewards[idx].mean().item())
    closed = pn / 64 * (np.dot(w, pn) - w)
    np.testing.assert_allclose(closed, z.grad.numpy(), rtol=1e-12, atol=1e-18)


def test_same_seed_same_trajectory_bit_for_bit() -> None:
    spec = SimulationSpec(**SMALL, n=32, seed=3)
    a, b = simulate(spec), simulate(spec)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = simulate(SimulationSpec(**SMALL, n=32, seed=4))
    assert not np.array_equal(a["q_pos"].to_numpy(), c["q_pos"].to_numpy())


def test_output_columns_and_first_row() -> None:
    df = simulate(SimulationSpec(**SMALL, n=16, seed=0))
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == SMALL["steps"] + 1 and df["step"].tolist() == list(range(SMALL["steps"] + 1))
    first = df.iloc[0]
    assert first.pct_improved == 0.0 and first.worst_drop == 0.0
    # The theory columns describe the update t -> t+1, so the last row has none.
    assert df["dq_theorem1"].iloc[:-1].notna().all() and np.isnan(df["dq_theorem1"].iloc[-1])


def test_first_order_prediction_tracks_the_actual_change() -> None:
    """dq_first_order is the exact derivative along the step taken: close to dq_actual for small steps."""
    df = simulate(SimulationSpec(**SMALL, n=256, seed=1, optimizer=OptimizerSpec(lr=1e-5)))
    rel = (df.dq_first_order - df.dq_actual).abs().iloc[:-1] / df.dq_actual.abs().iloc[:-1]
    assert rel.median() < 1e-3


def test_paper_seeded_init() -> None:
    """The seeded init gives Q_pos(0) = 0.6296 and 6.30e-5 per correct token (prototype's sanity values)."""
    df = simulate(SimulationSpec(n=4, steps=1, seed=0))
    assert df.q_pos.iloc[0] == pytest.approx(0.6296, abs=1e-4)
    assert df.q_pos.iloc[0] / 10_000 == pytest.approx(6.30e-5, rel=1e-3)


def test_sampler_draws_from_p() -> None:
    """The pooled rejection sampler draws exactly from p: chi-square over groups and drawn slots."""
    spec = SimulationSpec(vocab=400, correct=40, init_anchor=2.0, n=1)
    s = Slots(spec.token_groups())
    rng = np.random.default_rng(11)
    # Activate some members and spread their logits so that members of a group differ.
    _softmax(s)
    masses = np.array([s.weighted_sum(g, s["p"]) for g in s.groups])
    s.draw(200, masses, rng)
    s.z[: s.span] += rng.normal(scale=0.5, size=s.span)
    _softmax(s)
    p = s["p"]
    masses = np.array([s.weighted_sum(g, p) for g in s.groups])
    expected = np.zeros(s.span)
    for g in s.groups:
        expected[g.members] = p[g.members]
        expected[g.off] = g.pool * p[g.off]
    total = 200_000
    observed = np.zeros(s.span)
    frozen = s.span
    for _ in range(total // 1000):
        chosen = np.concatenate(
            [s._draw_group(g, int(c), rng) for g, c in zip(s.groups, rng.multinomial(1000, masses)) if c]
        )
        observed += np.bincount(chosen, minlength=frozen)[:frozen]
    keep = expected > 0
    chi2, pvalue = stats.chisquare(observed[keep], expected[keep] / expected[keep].sum() * total)
    assert pvalue > 1e-3, (chi2, pvalue)


def test_statistically_equal_to_the_reference_without_replay() -> None:
    """Independent random streams: final Q_pos of both implementations agree within their seed spread."""
    fast = [simulate(SimulationSpec(**SMALL, n=8, seed=s)).q_pos.iloc[-1] for s in range(6)]
    ref = [simulate_reference(SimulationSpec(**SMALL, n=8, seed=s)).q_pos.iloc[-1] for s in range(6)]
    assert stats.ttest_ind(fast, ref).pvalue > 1e-3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n=0), "n (draws per step) must be >= 1"),
        (dict(n=-5), "n (draws per step) must be >= 1"),
        (dict(vocab=100, correct=100), "correct must be between 1 and vocab - 1"),
        (dict(vocab=100, correct=150), "correct must be between 1 and vocab - 1"),
        (dict(steps=0), "steps must be >= 1"),
        (dict(optimizer=dict(lr=-1e-3)), "lr must be > 0"),
        (dict(optimizer=dict(name="adam")), "optimizer must be one of adamw, sgd"),
        (dict(optimizer=dict(eps=0.0)), "eps must be > 0"),
        (dict(optimizer=dict(weight_decay=-0.1)), "weight decay must be >= 0"),
        (dict(optimizer=dict(betas=(0.9, 1.0))), "betas must be two numbers in [0, 1)"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(SimulationError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        if "optimizer" in kwargs:
            SimulationSpec(optimizer=OptimizerSpec(**kwargs["optimizer"]))
        else:
            SimulationSpec(**kwargs)


def test_cli_run_writes_parquet(tmp_path) -> None:
    out = tmp_path / "N16_seed0.parquet"
    cmd = [
        sys.executable,
        "-m",
        "brorl.simulation",
        "run",
        "--vocab",
        "2000",
        "--correct",
        "200",
        "--n",
        "16",
        "--steps",
        "20",
        "--seed",
        "0",
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert "Q_pos" in done.stdout
    df, meta = read_run(out)
    assert {"step", "q_pos", "pct_improved", "worst_drop"} <= set(df.columns) and len(df) == 21
    assert meta["spec"]["n"] == 16 and meta["label"] == "main"


def test_cli_runs_several_n_and_seeds_in_one_process_as_it_would_one_by_one(tmp_path) -> None:
    """simulate_token_level and simulate_sensitivity run a list of (N, seed) in one process: each file equals the run
    made alone, whatever ran before it; counts that do not pair up are refused before any run."""
    base = [sys.executable, "-m", "brorl.simulation", "run", "--vocab", "2000", "--correct", "200", "--steps", "20"]
    together = [tmp_path / "N16_seed1.parquet", tmp_path / "N4_seed0.parquet"]
    cmd = [*base, "--n", "16", "4", "--seed", "1", "0", "--out", *map(str, together)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert done.stdout.count("Q_pos") == 2
    for (n, seed), path in zip([(16, 1), (4, 0)], together):
        alone = tmp_path / f"alone_{path.name}"
        subprocess.run(
            [*base, "--n", str(n), "--seed", str(seed), "--out", str(alone)], capture_output=True, check=True
        )
        assert read_run(path)[0].equals(read_run(alone)[0]), path.name
        assert read_run(path)[1]["spec"]["seed"] == seed
    bad = subprocess.run(
        [*base, "--n", "4", "16", "--out", str(tmp_path / "x.parquet")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "pair up run by run" in bad.stderr and not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "0"], "n (draws per step) must be >= 1"),
        (["--n", "4", "--correct", "128000"], "correct must be between 1 and vocab - 1"),
        (["--n", "4", "--lr", "-1"], "lr must be > 0"),
        (["--n", "4", "--optimizer", "rmsprop"], "optimizer must be one of adamw, sgd"),
    ],
)
def test_cli_rejects_bad_parameters_before_running(tmp_path, args: list[str], message: str) -> None:
    out = tmp_path / "x.parquet"
    done = subprocess.run(
        [sys.executable, "-m", "brorl.simulation", "run", *args, "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 2 and message in done.stderr and not out.exists()


def test_the_n_grid_table_says_whether_the_gain_is_monotonic_and_concave_in_log_n() -> None:
    from brorl.simulation.n_grid import n_grid_table, shape_verdict

    def runs(gains: dict[int, float]) -> pd.DataFrame:
        rows = []
        for n, g in gains.items():
            rows += [
                {
                    "label": "main",
                    "n": n,
                    "seed": 0,
                    "step": 0,
                    "q_pos": 0.6,
                    "pct_improved": 0.0,
                    "worst_drop": 0.0,
                    "correct": 10,
                },
                {
                    "label": "main",
                    "n": n,
                    "seed": 0,
                    "step": 1,
                    "q_pos": 0.6 + g,
                    "pct_improved": 50.0,
                    "worst_drop": -1e-6,
                    "correct": 10,
                },
            ]
        return pd.DataFrame(rows)

    concave = n_grid_table(runs({4: 0.0, 8: 0.004, 16: 0.007, 64: 0.012}))
    assert concave["gain per doubling"].round(6).tolist()[1:] == [0.004, 0.003, 0.0025]
    assert shape_verdict(concave) == {"monotonic": True, "concave_in_log_n": True, "first_non_concave_N": None}
    convex = shape_verdict(n_grid_table(runs({4: 0.0, 8: 0.001, 16: 0.005, 32: 0.004})))
    assert convex == {"monotonic": False, "concave_in_log_n": False, "first_non_concave_N": 16}


def test_a_diverging_optimizer_is_named_instead_of_sampling_from_nan() -> None:
    """SGD at lr 1e3 with weight decay 0.01 (coupled: each step pulls z by 10 x itself, so the logits blow up): a
    clear error, not numpy's NaN pvals."""
    from brorl.simulation.spec import SimulationError

    small = dict(vocab=2000, correct=200, steps=50)
    spec = SimulationSpec(
        **small, n=64, seed=0, anchor_correct=True, optimizer=OptimizerSpec("sgd", lr=1000.0, weight_decay=0.01)
    )
    with pytest.raises(SimulationError, match="the optimizer diverged"):
        simulate(spec)
