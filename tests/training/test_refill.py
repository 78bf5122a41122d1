"""Dynamic sampling's refill (brorl.training.refill, brorl.training.openrlhf.refill_hook) against OpenRLHF 0.11.2's
own `_generate_vllm`, driven by a fake engine whose groups are kept with probability 0.41 (ProRL's pass rate,
Table 2) at 512 prompts a step. The fake engine measures each step's depth itself (the longest chain of dispatches
that waited on a scored group), so the hook's own records are checked, not trusted."""

from __future__ import annotations

import itertools
import random
import statistics
from types import SimpleNamespace as NS

import pytest
from brorl.training.refill import MAX_DRAW_FACTOR, keep_rate, refill_draw, rounds_depth, serial_depth

PROMPTS, RATE, STEPS, N = 512, 0.41, 12, 2


def test_the_depth_formulas_at_the_papers_pass_rates():
    assert serial_depth(PROMPTS, RATE) == pytest.approx(13.4, abs=0.1)  # ProRL, OpenRLHF's chain
    assert rounds_depth(PROMPTS, RATE) == pytest.approx(2.7, abs=0.1)
    assert serial_depth(128, 0.62) == pytest.approx(6.1, abs=0.1)  # BroRL
    assert rounds_depth(128, 0.62) < 3
    assert serial_depth(PROMPTS, 1.0) == 1.0 and rounds_depth(PROMPTS, 1.0) == 1.0


def test_the_draw_is_bounded_and_never_divides_by_zero():
    assert keep_rate(0, 512) > 0  # nothing kept yet
    assert refill_draw(512, 0, 512, 512, "rounds") == MAX_DRAW_FACTOR * 512
    assert refill_draw(302, 210, 512, 512, "rounds") == 736  # 302 / (211 / 514)
    assert refill_draw(302, 210, 512, 512, "serial") == 302
    assert refill_draw(0, 512, 600, 512, "rounds") == 0
    with pytest.raises(ValueError, match="refill mode"):
        refill_draw(1, 0, 1, 1, "batch")


@pytest.fixture(scope="module")
def samples_generator():
    return pytest.importorskip("openrlhf.trainer.ppo_utils.samples_generator")


class FakeEngine:
    """Refs complete in dispatch order; a ref's depth is 1 + the depth of the group whose result was read last."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rng, self.rate = random.Random(seed), rate
        self.depth_of, self.current, self.max_depth, self.ids = {}, 0, 0, itertools.count()

    def new_step(self) -> None:
        self.current = self.max_depth = 0

    def dispatch(self, prompts: list) -> list:
        refs = []
        for _ in prompts:
            ref = next(self.ids)
            kept = self.rng.random() < self.rate
            self.depth_of[ref] = (self.current + 1, [1.0, 0.0] if kept else [0.0, 0.0])
            self.max_depth = max(self.max_depth, self.current + 1)
            refs.append(ref)
        return refs

    # Ray's two calls, as _generate_vllm makes them
    def wait(self, refs, num_returns=1, timeout=None):
        return list(refs)[:1], list(refs)[1:]

    def get(self, ref):
        self.current, scores = self.depth_of.pop(ref)
        return [NS(score=s) for s in scores]


def fake_generator(module, engine: FakeEngine):
    import torch

    class Generator(module.SamplesGenerator):
        def _dispatch_prompts_to_vllm(self, prompts, labels, *, images=None, **kwargs):
            return engine.dispatch(prompts)

        def _process_response_into_experience(self, response, **kwargs):
            return NS(scores=[torch.tensor(response.score)])

    generator = Generator.__new__(Generator)
    generator.args = NS(algo=NS(dynamic_filtering_range=(0.0, 1.0)))
    return generator


def prompts():
    for i in itertools.count():
        yield None, [f"p{i}"], [f"l{i}"], [None]


def depths(module, engine, call) -> list[int]:
    """The fake engine's depth of each of STEPS calls; each call must return the step's groups, no more."""
    out, stream = [], prompts()
    for _ in range(STEPS):
        engine.new_step()
        experiences, consumed, _ = call(stream)[:3]
        assert len(experiences) == PROMPTS * N and consumed >= PROMPTS
        out.append(engine.max_depth)
    return out


def test_round_refill_takes_the_formulas_waves_where_openrlhfs_chain_takes_many(samples_generator, monkeypatch):
    from brorl.training.openrlhf.refill_hook import run_waves

    engine = FakeEngine(RATE, seed=1)
    generator = fake_generator(samples_generator, engine)
    rounds = depths(
        samples_generator,
        engine,
        lambda it: run_waves(generator, samples_generator, engine, it, PROMPTS, "rounds", 8, {}),
    )
    serial = depths(
        samples_generator,
        engine,
        lambda it: run_waves(generator, samples_generator, engine, it, PROMPTS, "serial", 64, {}),
    )
    monkeypatch.setattr(samples_generator, "ray", engine)  # OpenRLHF's own dispatch, unhooked
    original = depths(
        samples_generator,
        engine,
        lambda it: samples_generator.SamplesGenerator._generate_vllm(generator, it, PROMPTS, True),
    )
    bound = rounds_depth(PROMPTS, RATE) + 1.0
    assert statistics.mean(rounds) <= bound and max(rounds) <= 8, rounds
    # the same assertion fails against OpenRLHF's original dispatch: its chains are the serial formula's length
    assert statistics.mean(original) > 2 * bound, original
    for chain in (serial, original):
        assert statistics.mean(chain) == pytest.approx(serial_depth(PROMPTS, RATE), abs=2.0), chain


def test_the_hook_records_waves_refills_together_and_drops_the_surplus(samples_generator, tmp_path):
    from brorl.training.openrlhf.logs import read_hook_entries
    from brorl.training.openrlhf.refill_hook import log_step, run_waves

    engine = FakeEngine(RATE, seed=2)
    generator = fake_generator(samples_generator, engine)
    experiences, consumed, exhausted, state = run_waves(
        generator, samples_generator, engine, prompts(), PROMPTS, "rounds", 8, {}
    )
    log_step(state, "rounds", 8, str(tmp_path))
    (entry,) = read_hook_entries(tmp_path)
    waves = entry["waves"]
    assert waves[0]["prompts"] == PROMPTS and waves[1]["prompts"] > 100  # the refill goes out in one wave
    assert sum(w["prompts"] for w in waves) == consumed == entry["consumed"] and not exhausted
    assert sum(w["kept"] for w in waves) >= PROMPTS == entry["kept"] and entry["short"] is None
    assert len(experiences) == PROMPTS * N  # kept groups beyond the step's prompts are not trained


def test_a_step_that_keeps_nothing_stops_at_max_rounds_with_a_bounded_draw(samples_generator, tmp_path, capsys):
    from brorl.training.openrlhf.logs import read_hook_entries
    from brorl.training.openrlhf.refill_hook import log_step, run_waves

    engine = FakeEngine(0.0, seed=3)
    generator = fake_generator(samples_generator, engine)
    experiences, consumed, _, state = run_waves(generator, samples_generator, engine, prompts(), 16, "rounds", 3, {})
    log_step(state, "rounds", 3, str(tmp_path))
    assert experiences == [] and len(state.waves) == 3
    assert consumed <= 16 + 2 * MAX_DRAW_FACTOR * 16
    assert read_hook_entries(tmp_path)[0]["short"] == "max_rounds 3 reached"
    assert "trains on 0 of 16 prompts: max_rounds 3 reached" in capsys.readouterr().out


def test_data_running_out_mid_step_trains_on_what_was_kept(samples_generator):
    from brorl.training.openrlhf.refill_hook import run_waves

    engine = FakeEngine(RATE, seed=4)
    generator = fake_generator(samples_generator, engine)
    experiences, consumed, exhausted, state = run_waves(
        generator, samples_generator, engine, itertools.islice(prompts(), 20), 16, "rounds", 8, {}
    )
    assert exhausted and consumed == 20 and len(experiences) < 16 * N


def test_the_installed_hook_leaves_evaluation_calls_to_openrlhf(samples_generator, monkeypatch, tmp_path):
    from brorl.training.openrlhf import refill_hook
    from brorl.training.openrlhf.logs import read_hook_entries

    monkeypatch.setattr(
        samples_generator.SamplesGenerator, "_generate_vllm", samples_generator.SamplesGenerator._generate_vllm
    )
    engine = FakeEngine(RATE, seed=5)
    monkeypatch.setattr(samples_generator, "ray", engine)
    refill_hook.install(samples_generator, "rounds", 8, str(tmp_path))
    generator = fake_generator(samples_generator, engine)
    experiences, consumed, _ = generator._generate_vllm(prompts(), 16, True)
    assert len(experiences) == 16 * N and len(read_hook_entries(tmp_path)) == 1
    experiences, consumed, _ = generator._generate_vllm(prompts(), 16, False)  # no filter: OpenRLHF's own loop
    assert consumed == 16 and len(experiences) == 16 * N and len(read_hook_entries(tmp_path)) == 1
    with pytest.raises(ValueError, match="BRORL_REFILL must be one of"):
        refill_hook.install(samples_generator, "batch", 8, None)


def test_the_step_time_split_reads_the_waves_and_the_update():
    from brorl.training.refill import step_time_text

    def record(waves: list[float]) -> dict:
        return {
            "refill": "rounds",
            "step_s": 10.0,
            "update_s": 3.0,
            "waves": [{"prompts": 1, "kept": 1, "s": s} for s in waves],
        }

    text = step_time_text([record([4.0, 2.0]), record([4.0, 1.0, 1.0])])
    assert text == "2.5 waves a step (max 3, rounds); waves 60%, update 30% of the step time"
    assert step_time_text([{"step_s": 1.0, "waves": None}]) is None  # metrics before schema 9
