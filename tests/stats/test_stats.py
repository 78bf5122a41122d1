"""brorl.stats: the paired one-tailed t-test against scipy and a hand calculation, its direction and degenerate
cases, recovery of a paper-sized effect and the false-positive rate under no effect, Holm's correction, bootstrap
CIs (reproducible, explicit Generator, no global RNG state), the import boundary (no pandas/torch/matplotlib),
the paper's own numbers, and the pandas side (instance means, compare_arms) plus a small run of the benchmark."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from brorl.stats import (
    bootstrap_ci,
    bootstrap_distribution,
    grouped_paired_one_tailed,
    holm,
    holm_reject,
    paired_bootstrap_ci,
    paired_one_tailed,
)
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}


# ---------------------------------------------------------------- the paired one-tailed t-test


@pytest.mark.parametrize("seed,n", [(0, 2), (1, 5), (2, 40), (3, 1000), (4, 12_200)])
def test_matches_scipy_ttest_rel_greater(seed, n):
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    treat = np.clip(base + rng.normal(0.01, 0.1, n), 0, 1)
    ours = paired_one_tailed(base, treat)
    ref = sps.ttest_rel(treat, base, alternative="greater")
    assert ours.t == pytest.approx(ref.statistic, rel=1e-10)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)
    assert ours.n == n and ours.df == n - 1
    d = treat - base
    assert ours.delta == pytest.approx(d.mean(), rel=1e-12)
    assert ours.sd_diff == pytest.approx(d.std(ddof=1), rel=1e-12)
    assert ours.se == pytest.approx(d.std(ddof=1) / math.sqrt(n), rel=1e-12)
    assert ours.effect_size == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    assert ours.note == ""


def test_hand_calculation():
    # d = [0.25, 0, 0.25, 0]: mean 1/8, sd sqrt(1/48), se sqrt(1/192), t = sqrt(3), df 3.
    # Student t with 3 df: F(t) = 1/2 + (t/sqrt3/(1 + t^2/3) + atan(t/sqrt3)) / pi -> p = 1/4 - 1/(2 pi).
    res = paired_one_tailed([0.5, 0.25, 0.75, 0.5], [0.75, 0.25, 1.0, 0.5])
    assert res.delta == 0.125
    assert res.sd_diff == pytest.approx(math.sqrt(1 / 48), rel=1e-14)
    assert res.se == pytest.approx(math.sqrt(1 / 192), rel=1e-14)
    assert res.t == pytest.approx(math.sqrt(3), rel=1e-14)
    assert res.df == 3 and res.n == 4
    assert res.p == pytest.approx(0.25 - 1 / (2 * math.pi), rel=1e-12)
    assert res.effect_size == pytest.approx(0.125 / math.sqrt(1 / 48), rel=1e-14)


def test_direction_of_the_alternative():
    rng = np.random.default_rng(7)
    a, b = rng.random(300), rng.random(300)
    fwd, rev = paired_one_tailed(a, b), paired_one_tailed(b, a)
    assert rev.t == pytest.approx(-fwd.t, rel=1e-12)
    assert rev.delta == pytest.approx(-fwd.delta, rel=1e-12)
    assert rev.p == pytest.approx(1 - fwd.p, abs=1e-12)
    # a clear improvement gives a small p, a clear degradation a p near 1
    assert paired_one_tailed(a, a + 0.1 + rng.normal(0, 0.01, 300)).p < 1e-10
    assert paired_one_tailed(a + 0.1 + rng.normal(0, 0.01, 300), a).p > 1 - 1e-10


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_pairs_gives_nan_with_note(n):
    res = paired_one_tailed(np.zeros(n), np.ones(n))
    assert res.n == n
    assert math.isnan(res.t) and math.isnan(res.p) and math.isnan(res.sd_diff) and math.isnan(res.se)
    assert "< 2" in res.note
    if n == 1:
        assert res.delta == 1.0


@pytest.mark.parametrize(
    "shift,t,p,word",
    [(0.25, math.inf, 0.0, "> 0"), (-0.25, -math.inf, 1.0, "< 0"), (0.0, math.nan, 0.5, "are 0")],
)
def test_all_equal_differences(shift, t, p, word):
    base = np.array([0.0, 0.25, 0.5, 0.75])
    res = paired_one_tailed(base, base + shift)
    assert res.sd_diff == 0.0 and res.se == 0.0 and res.delta == shift
    assert res.p == p
    assert (math.isnan(res.t) and math.isnan(t)) or res.t == t
    assert word in res.note


def test_nan_and_length_errors():
    with pytest.raises(ValueError, match="2 NaN pair.*baseline 1, treatment 1"):
        paired_one_tailed([0.1, np.nan, 0.3], [0.2, 0.1, np.nan])
    with pytest.raises(ValueError, match="1 NaN pair"):
        paired_one_tailed([0.1, 0.2], [np.nan, 0.1])
    with pytest.raises(ValueError, match="length: baseline 3, treatment 2"):
        paired_one_tailed([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="1-D"):
        paired_one_tailed(np.zeros((2, 2)), np.zeros((2, 2)))


def test_result_is_frozen():
    res = paired_one_tailed([0, 0.5, 1], [0.5, 0.5, 1])
    with pytest.raises(AttributeError):
        res.t = 0.0  # type: ignore[misc]
    assert set(res.to_dict()) >= {"delta", "t", "p", "n", "df", "sd_diff", "se", "effect_size", "note"}


def test_grouped_equals_per_group_scalar_test():
    rng = np.random.default_rng(11)
    sizes = [50, 1, 4, 300, 2]
    groups = np.repeat(np.arange(len(sizes)), sizes)
    base = rng.random(groups.size)
    treat = base + rng.normal(0.02, 0.1, groups.size)
    treat[groups == 2] = base[groups == 2] + 0.25  # all-equal differences in group 2
    perm = rng.permutation(groups.size)  # groups need not be contiguous
    res = grouped_paired_one_tailed(base[perm], treat[perm], groups[perm], n_groups=len(sizes) + 1)
    for g in range(len(sizes)):
        ref = paired_one_tailed(base[groups == g], treat[groups == g])
        for key in ("delta", "t", "p", "sd_diff", "se", "effect_size"):
            assert res[key][g] == pytest.approx(getattr(ref, key), rel=1e-9, nan_ok=True), (g, key)
        assert res["n"][g] == ref.n and res["note"][g] == ref.note
    assert res["n"][-1] == 0 and math.isnan(res["p"][-1])  # an empty group


# ---------------------------------------------------------------- a paper-sized effect, and no effect


def _exact_moments(rng, n, mean, sd):
    z = rng.standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def test_recovers_the_paper_sized_effect():
    rng = np.random.default_rng(2510)
    n, delta, sd = 12_200, 0.0033, 0.075
    base = rng.random(n)
    treat = base + _exact_moments(rng, n, delta, sd)
    res = paired_one_tailed(base, treat)
    assert res.delta == pytest.approx(delta, rel=1e-9)
    assert res.sd_diff == pytest.approx(sd, rel=1e-9)
    assert res.t == pytest.approx(delta * math.sqrt(n) / sd, rel=1e-9)
    assert res.t == pytest.approx(4.86, abs=0.01)
    assert res.p < 1e-5
    ci = paired_bootstrap_ci(base, treat, resamples=4000, rng=np.random.default_rng(1))
    assert ci.covers(delta) and ci.low > 0
    # over repeated random draws the t statistic centres on 4.86 (sd ~1)
    draws = 200
    d = rng.normal(delta, sd, (draws, n))
    g = np.repeat(np.arange(draws), n)
    t = grouped_paired_one_tailed(np.zeros(d.size), d.reshape(-1), g)["t"]
    assert t.mean() == pytest.approx(4.86, abs=0.25)
    assert 0.8 < t.std(ddof=1) < 1.2


def test_false_positive_rate_under_no_effect():
    rng = np.random.default_rng(99)
    draws, n, alpha = 400, 200, 0.05
    p = np.array([paired_one_tailed(rng.random(n), rng.random(n)).p for _ in range(draws)])
    rejections = int((p <= alpha).sum())
    lo, hi = sps.binom.ppf([0.0005, 0.9995], draws, alpha)  # a 99.9 % binomial band around 20 of 400
    assert lo <= rejections <= hi, rejections
    # and p is uniform under the null (one-tailed, both directions equally likely)
    assert sps.kstest(p, "uniform").pvalue > 0.001


def test_paper_numbers_are_consistent():
    from scipy.special import stdtr

    n, sd, delta = 12_200, 0.075, 0.0033
    t = delta * math.sqrt(n) / sd
    assert t == pytest.approx(4.86, abs=0.005)
    assert stdtr(n - 1, -t) == pytest.approx(6e-7, rel=0.1)
    # the reported t = 4.84 gives the reported p = 6.5e-7 for any df around 10^4
    for df in (10_000, 12_199, 12_213):
        assert stdtr(df, -4.84) == pytest.approx(6.5e-7, rel=0.02)
    # and implies the sd of paired differences ~0.075 at 1,590 + 1,024 + 9,600 units
    assert delta * math.sqrt(1_590 + 1_024 + 9_600) / 4.84 == pytest.approx(0.075, abs=0.001)


# ---------------------------------------------------------------- Holm


def test_holm_hand_example():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02 0.03 0.06 0.06
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    assert holm_reject(p, 0.05).tolist() == [True, False, False, True]
    np.testing.assert_array_equal(holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_array_equal(holm([0.2]), [0.2])
    assert holm([]).size == 0


def test_holm_monotone_bounded_and_nan_aware():
    rng = np.random.default_rng(3)
    p = rng.random(50) ** 3
    adj = holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p) and np.all(adj <= 1)
    assert np.all(adj <= np.minimum(p * p.size, 1) + 1e-15)  # never worse than Bonferroni
    with_nan = holm([0.01, np.nan, 0.02])
    assert math.isnan(with_nan[1])
    np.testing.assert_allclose(with_nan[[0, 2]], [0.02, 0.02])  # m = 2 tests performed
    assert holm_reject([0.01, np.nan], 0.05).tolist() == [True, False]
    with pytest.raises(ValueError):
        holm([1.5])


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_reproducible_and_covering():
    rng = np.random.default_rng(5)
    x = rng.normal(0.3, 1.0, 2000)
    a = bootstrap_ci(x, resamples=3000, rng=np.random.default_rng(42))
    b = bootstrap_ci(x, resamples=3000, rng=np.random.default_rng(42))
    c = bootstrap_ci(x, resamples=3000, rng=np.random.default_rng(43))
    assert a == b and a != c
    assert a.low < x.mean() < a.high and a.estimate == pytest.approx(x.mean())
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert (a.high - a.low) / 2 == pytest.approx(half, rel=0.1)
    med = bootstrap_ci(x, statistic=np.median, level=0.9, resamples=500, rng=np.random.default_rng(0))
    assert med.low < np.median(x) < med.high and med.level == 0.9


def test_bootstrap_uses_no_global_state_and_requires_a_generator():
    before = np.random.get_state()[1].copy()
    paired_bootstrap_ci(np.zeros(100), np.linspace(0, 1, 100), resamples=200, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    with pytest.raises(TypeError, match="Generator"):
        bootstrap_ci(np.ones(3), rng=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bootstrap_ci(np.ones(3))  # rng is required


def test_paired_bootstrap_is_the_bootstrap_of_differences_and_chunks_large_inputs():
    rng = np.random.default_rng(8)
    base, treat = rng.random(50_000), rng.random(50_000)  # 50,000 x 300 resamples spans several chunks
    p = paired_bootstrap_ci(base, treat, resamples=300, rng=np.random.default_rng(1))
    q = bootstrap_ci(treat - base, resamples=300, rng=np.random.default_rng(1))
    assert p == q
    with pytest.raises(ValueError, match="length"):
        paired_bootstrap_ci([1, 2], [1], rng=np.random.default_rng(0))


def _chunked_percentile_bootstrap(x, statistic, level, resamples, rng):
    """The documented draws, by hand: (2**22 // n, n) indices at a time from rng.integers, then percentiles."""
    chunk = max(1, (1 << 22) // x.size)
    dist = np.concatenate(
        [
            statistic(x[rng.integers(0, x.size, size=(min(chunk, resamples - start), x.size))], axis=-1)
            for start in range(0, resamples, chunk)
        ]
    )
    alpha = (1 - level) / 2
    return dist, tuple(float(q) for q in np.quantile(dist, [alpha, 1 - alpha]))


@pytest.mark.parametrize(
    "n, resamples, statistic, level",
    [(2, 7, np.mean, 0.95), (1590, 2000, np.mean, 0.9), (50_000, 300, np.median, 0.95)],
)
def test_bootstrap_results_are_stable_for_a_seed(n, resamples, statistic, level):
    """scipy.stats.bootstrap inside gives exactly the draws and intervals of the chunked bootstrap it replaced (the
    error bars of every score depend on them), and leaves the generator in the same state."""
    x = np.random.default_rng(n).random(n)
    ours, ref = np.random.default_rng(7), np.random.default_rng(7)
    ci = bootstrap_ci(x, statistic, level, resamples, rng=ours)
    dist, interval = _chunked_percentile_bootstrap(x, statistic, level, resamples, ref)
    assert (ci.low, ci.high) == interval and ci.estimate == float(statistic(x))
    assert ours.random() == ref.random()
    np.testing.assert_array_equal(bootstrap_distribution(x, statistic, resamples, rng=np.random.default_rng(7)), dist)


def test_bootstrap_of_one_value_or_one_resample(recwarn):
    rng = np.random.default_rng(0)
    one = bootstrap_ci([0.25], resamples=50, rng=rng)
    assert (one.estimate, one.low, one.high, one.n) == (0.25, 0.25, 0.25, 1)
    np.testing.assert_array_equal(bootstrap_distribution([0.25], resamples=3, rng=rng), [0.25] * 3)
    single = bootstrap_ci([0.0, 1.0, 1.0], resamples=1, rng=rng)
    assert single.low == single.high and single.resamples == 1
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    with pytest.raises(ValueError, match="empty"):
        bootstrap_ci([], rng=rng)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([1.0, 2.0], resamples=0, rng=rng)


def test_the_bootstrap_and_the_t_test_are_scipys(monkeypatch):
    calls = []

    def spy(name):
        real = getattr(sps, name)
        monkeypatch.setattr(sps, name, lambda *a, **k: calls.append((name, k)) or real(*a, **k))

    spy("bootstrap")
    spy("ttest_rel")
    base, treat = np.linspace(0, 1, 30), np.linspace(0, 1, 30) ** 2
    paired_bootstrap_ci(base, treat, resamples=100, rng=np.random.default_rng(0))
    paired_one_tailed(base, treat)
    assert [(name, k.get("method") or k.get("alternative")) for name, k in calls] == [
        ("bootstrap", "percentile"),
        ("ttest_rel", "greater"),
    ]
    # all differences equal: the wrapper's own answer, not scipy's NaN
    paired_one_tailed(np.zeros(30), np.full(30, 0.5))
    assert len(calls) == 2


# ---------------------------------------------------------------- the import boundary


def test_importing_brorl_stats_is_light():
    code = (
        "import sys, brorl.stats; "
        "print(sorted(m for m in ('torch', 'vllm', 'pandas', 'matplotlib', 'scipy.stats') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_package_exports_every_public_name_of_the_tests_module_on_first_use():
    import brorl.stats
    import brorl.stats.tests

    assert sorted(brorl.stats.__all__) == sorted(brorl.stats.tests.__all__)
    assert all(getattr(brorl.stats, name) is getattr(brorl.stats.tests, name) for name in brorl.stats.__all__)


# ---------------------------------------------------------------- units and compare_arms


def _samples(rng, benches, samples=4, shift=0.0):
    rows = []
    for bench, fam, n in benches:
        for i in range(n):
            p = rng.random()
            for s in range(samples):
                rows.append((bench, fam, f"{bench}-{i}", s, float(rng.random() < min(1.0, p + shift))))
    return pd.DataFrame(rows, columns=["benchmark", "family", "id", "sample_idx", "score"])


def test_instance_means():
    from brorl.stats.units import instance_means

    frame = pd.DataFrame(
        {
            "benchmark": ["b", "a", "a", "b", "a", "a"],
            "family": ["code", "math", "math", "code", "math", "math"],
            "id": [1, 7, 7, 1, 3, 3],
            "sample_idx": [0, 0, 1, 1, 1, 0],
            "score": [1.0, 0.0, 1.0, 0.5, 1.0, 1.0],
        }
    )
    units = instance_means(frame, expected_samples=2)
    assert units[["benchmark", "id"]].values.tolist() == [["a", 3], ["a", 7], ["b", 1]]
    assert units["score"].tolist() == [1.0, 0.5, 0.75]
    assert units["n_samples"].tolist() == [2, 2, 2] and units["family"].tolist() == ["math", "math", "code"]
    # same as a pandas groupby
    ref = frame.groupby(["benchmark", "id"])["score"].mean()
    np.testing.assert_allclose(units["score"], ref.to_numpy())
    with pytest.raises(ValueError, match="1 NaN"):
        instance_means(frame.assign(score=[np.nan, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="1 instance.*duplicated"):
        instance_means(frame.assign(sample_idx=[0, 0, 0, 1, 1, 0]))
    with pytest.raises(ValueError, match="3 instance.*3 samples"):
        instance_means(frame, expected_samples=3)
    with pytest.raises(ValueError, match="lacks column"):
        instance_means(frame.drop(columns="score"))


def test_compare_arms_rows():
    from brorl.stats.units import compare_arms, instance_means

    rng = np.random.default_rng(21)
    benches = [("aime", "math", 30), ("apps", "code", 40), ("rg_a", "reasoning_gym", 60), ("rg_b", "reasoning_gym", 1)]
    base = instance_means(_samples(rng, benches))
    treat = instance_means(_samples(rng, benches, shift=0.1))
    rows = compare_arms(base, treat, rng=np.random.default_rng(0), resamples=500)
    pooled = rows[0]
    merged = base.merge(treat, on=["benchmark", "id"], suffixes=("_b", "_t"))
    ref = sps.ttest_rel(merged["score_t"], merged["score_b"], alternative="greater")
    assert pooled["level"] == "pooled" and pooled["n"] == 131
    assert pooled["t"] == pytest.approx(ref.statistic) and pooled["p"] == pytest.approx(ref.pvalue)
    assert pooled["ci_low"] < pooled["delta"] < pooled["ci_high"]
    bench_rows = [r for r in rows if r["level"] == "benchmark"]
    fam_rows = [r for r in rows if r["level"] == "family"]
    assert [r["group"] for r in fam_rows] == ["code", "math", "reasoning_gym"]
    assert [r["group"] for r in bench_rows] == ["aime", "apps", "rg_a", "rg_b"]
    assert bench_rows[0]["family"] == "math"
    for r in bench_rows[:3]:
        sub = merged[merged["benchmark"] == r["group"]]
        one = paired_one_tailed(sub["score_b"], sub["score_t"])
        assert r["p"] == pytest.approx(one.p) and r["n"] == one.n
    assert math.isnan(bench_rows[3]["p"]) and "< 2" in bench_rows[3]["note"]  # n = 1: reported, not crashed
    np.testing.assert_allclose([r["p_holm"] for r in bench_rows], holm([r["p"] for r in bench_rows]))
    assert all(r["p_holm"] >= r["p"] for r in bench_rows[:3])
    # an instance missing from one arm is an error, and a families mapping works without a family column
    with pytest.raises(ValueError, match="1 instance.*only in baseline"):
        compare_arms(base, treat.iloc[1:])
    fams = {"aime": "math", "apps": "code", "rg_a": "reasoning_gym", "rg_b": "reasoning_gym"}
    rows2 = compare_arms(base.drop(columns="family"), treat.drop(columns="family"), families=fams)
    assert [r["p"] for r in rows2[1:]] == pytest.approx([r["p"] for r in rows[1:]], nan_ok=True)
    only_bench = compare_arms(base, treat, by=["benchmark"])
    assert {r["level"] for r in only_bench} == {"pooled", "benchmark"}


def test_bench_small_run(tmp_path):
    from brorl.ops.speed import stats as bench

    out = tmp_path / "bench.json"
    assert bench.main(["--out", str(out), "--scale", "0.05", "--checkpoints", "2", "--resamples", "200"]) == 0
    report = json.loads(out.read_text())
    assert report["sizes"]["checkpoints"] == 2 and report["sizes"]["benchmarks"] == 106
    assert report["sizes"]["scored_samples"] == report["sizes"]["instances"] * 16 * 2 * 2
    assert report["seconds"]["analysis_wall"] > 0 and report["peak_rss_mib"] > 0
    assert len(report["per_checkpoint"]) == 2
