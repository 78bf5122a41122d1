"""The embedded (CPU) engine: one training segment of one arm, the paper's recipe at tiny scale.

Each RL step: draw prompts_per_step prompts -> N vLLM rollouts each (with logprobs) -> the shared reward ->
dynamic sampling (drop prompts whose N binary scores are all equal; refill with fresh prompts) -> REINFORCE++
-baseline advantages -> old and reference logprobs -> mini-batch updates with OpenRLHF's PolicyLoss and KL ->
AdamW -> new weights into vLLM. After every step: export (saved steps), the step's prompts and metrics lines, full
state, in that order, so a run killed at any point redoes at most the step in progress and each step appears once in
metrics.jsonl.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...scoring.reasoning import as_scored
from .. import metrics as metrics_io
from .. import step_prompts
from ..recipe import ArmPlan, Segment, lr_at, recipe_fingerprint
from ..refill import Wave, refill_draw, shortfall_reason, shortfall_warning
from ..run_folder import check_fingerprint
from ..segments import CheckpointError, SegmentJob
from ..tracking import SegmentLogger, Tracking
from . import state as run_state
from .advantages import advantages, keep_groups, token_rms
from .prompts import PromptStream, derived_seed
from .step_outcome import StepOutcome

if TYPE_CHECKING:
    import torch

    from .trainer import PolicyTrainer


class TrainingError(RuntimeError):
    """A training run that cannot start or continue (names the file or key to fix)."""


ERRORS = (TrainingError,)  # the errors that end a job of this engine with one `error: ...` line (brorl.training.cli)


def run_segment(config: Mapping[str, Any], job: SegmentJob) -> tuple[list[dict], dict]:
    """Train segment `job.index` of `job.plan` in this process; returns (its metrics records, manifest extras)."""
    run = EmbeddedRun(config, job.plan, job.start_model, job.train_data, job.out_dir)
    records = run.run_segment(job.index, stop_after=job.stop_after, tracking=job.tracking, stop=job.stop)
    return records, {"engine": "embedded", "dropped_prompts": getattr(run, "dropped_prompts", None)}


def usable_items(items: list[dict], prompt_lengths: list[int], limit: int) -> tuple[list[dict], int]:
    """Items whose templated prompt fits `limit` tokens, and how many were left out (reported, never silent)."""
    kept = [item for item, length in zip(items, prompt_lengths) if length <= limit]
    return kept, len(items) - len(kept)


class EmbeddedRun:
    """One arm's run folder driven step by step; `run_segment` is the entry point. `plan`: the arm's plan, derived
    from `config` (recipe.arm_plan)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        plan: ArmPlan,
        start_model: Path,
        train_data: Path,
        out_dir: Path,
        progress: bool = True,
    ) -> None:
        self.config, self.arm = config, plan.name
        self.plan = plan
        self.train = config["training"]
        self.start_model, self.train_data = Path(start_model), Path(train_data)
        self.out_dir = Path(out_dir)
        self.run_dir = self.out_dir / "run"
        self.metrics_path = self.run_dir / "metrics.jsonl"  # live; finish_training publishes the complete file
        self.prompts_path = self.run_dir / step_prompts.FILE  # each step's own prompts (the in-batch probe)
        self.progress = progress
        ctx = config["context"]
        self.max_tokens = ctx["train_max_len"]
        self.prompt_max_len = ctx["prompt_max_len"]
        self._pool = None  # the verifier workers of the running segment (_scoring_pool)

    # ------------------------------------------------------------------------------------------------ set-up
    def _setup(self, segment: Segment) -> int:
        """Load items, engine, policy, reference and optimizer at the committed step; returns that step."""
        import torch

        from brorl.benchmarks.records import read_records

        from .rollout import RolloutEngine
        from .trainer import load_causal_lm

        torch.set_num_threads(self.train["embedded"]["threads"])
        from brorl.models.verify import verify_model_dir

        verify_model_dir(self.start_model)  # the start model's sha256 are checked on every use
        committed = run_state.latest_step(self.run_dir) or 0
        if committed < segment.first_step - 1:
            raise TrainingError(
                f"arm {self.arm!r} segment {segment.index} starts at step {segment.first_step} but "
                f"the run has only reached step {committed}: run segment {segment.index - 1} first"
            )
        self.engine = RolloutEngine(
            str(self.start_model),
            self.prompt_max_len + self.max_tokens,
            seed=self.plan.seed,
            max_num_seqs=max(self.plan.samples_per_step, 64),
        )
        items = read_records(self.train_data)
        lengths = [len(ids) for ids in self.engine.engine.prompt_token_ids([i["prompt"] for i in items])]
        items, self.dropped_prompts = usable_items(items, lengths, self.prompt_max_len)
        policy = load_causal_lm(str(self.start_model))
        reference = load_causal_lm(str(self.start_model)) if self.train["kl"]["coef"] > 0 else None
        self.trainer = self._new_trainer(policy, reference)
        self.wall_s, self.ref_step = 0.0, 0
        self.stream = PromptStream(items, self.plan.seed)
        if committed:
            self._restore(committed, items, policy)
        if segment.reset_reference and committed == segment.first_step - 1 and self.ref_step != committed:
            self._reset_reference(committed, policy)
        if reference is not None and self.ref_step:
            reference.load_state_dict(torch.load(run_state.reference_path(self.run_dir, self.ref_step)))
        metrics_io.truncate_after(self.metrics_path, committed)
        step_prompts.truncate_after(self.prompts_path, committed)
        return committed

    def _new_trainer(self, policy: torch.nn.Module, reference: torch.nn.Module | None) -> PolicyTrainer:
        """A trainer of `policy` against `reference`: the arm's lr, the config's optimizer, loss and micro-batches."""
        from .trainer import LossSettings, PolicyTrainer

        opt = self.train["optimizer"]
        loss = LossSettings.from_config(self.train)
        return PolicyTrainer(
            policy,
            reference,
            loss,
            lr=self.plan.lr,
            betas=tuple(opt["betas"]),
            eps=opt["eps"],
            weight_decay=opt["weight_decay"],
            grad_clip=self.train["grad_clip"],
            micro_batch_size=self.train["embedded"]["micro_batch_size"],
        )

    def _restore(self, committed: int, items: list[dict], policy: torch.nn.Module) -> None:
        """Resume from the full state saved at step `committed`: policy, optimizer, prompt cursor, clocks, vLLM."""
        saved = run_state.load_state(self.run_dir, committed)
        policy.load_state_dict(saved["policy"])
        groups = len(saved["optimizer"]["param_groups"])
        if groups != len(self.trainer.optimizer.param_groups):
            raise CheckpointError(
                f"{self.run_dir}: its optimizer state has {groups} parameter group(s); this version has "
                f"{len(self.trainer.optimizer.param_groups)} (biases and norms exempt from weight decay, as "
                "OpenRLHF): retrain the arm (delete its results/train/<arm>/run)"
            )
        self.trainer.optimizer.load_state_dict(saved["optimizer"])
        self.stream = PromptStream.restore(items, self.plan.seed, saved["cursor"])
        self.wall_s, self.ref_step = saved["wall_s"], saved["ref_step"]
        self.engine.load_weights(policy.state_dict().items())

    def _reset_reference(self, committed: int, policy: torch.nn.Module) -> None:
        """ProRLv2 reset: the reference becomes the policy the segment starts from (a fresh optimizer without
        training.reference_reset.keep_optimizer)."""
        self.ref_step = committed
        if not run_state.reference_path(self.run_dir, committed).exists():
            run_state.save_reference(self.run_dir, committed, policy.state_dict())
        if not self.train["reference_reset"]["keep_optimizer"]:
            self.trainer.optimizer = type(self.trainer.optimizer)(
                policy.parameters(), **self.trainer.optimizer.defaults
            )

    # ---------------------------------------------------------------------------------------------- one step
    def _scoring_pool(self):
        """The verifier workers of this segment, started at the first reward and kept until it ends (run_segment)."""
        from ...scoring import ScoringPool

        if self._pool is None:
            self._pool = ScoringPool(workers=2)
        return self._pool

    def _generate(self, step: int) -> StepOutcome:
        """Rollouts, rewards and dynamic sampling: waves refilled as brorl.training.refill says, until
        prompts_per_step prompts are kept or max_rounds waves ran (kept groups beyond the step's prompts dropped)."""
        ds = self.train["dynamic_sampling"]
        target, out = self.plan.prompts_per_step, StepOutcome()
        draw = target
        for round_ in range(ds["max_rounds"] if ds["enabled"] else 1):
            if draw <= 0:
                break
            self._wave(step, round_, self.stream.take(draw), out)
            kept = len(out.groups)
            draw = refill_draw(target - kept, kept, out.generated_prompts, target, ds["refill"])
        del out.groups[target:], out.rewards[target:]
        short = shortfall_reason(len(out.groups), target, len(out.waves), ds["max_rounds"], False)
        if short:
            print(shortfall_warning(step, len(out.groups), target, short))
        return out

    def _wave(self, step: int, round_: int, items: list[dict], out: StepOutcome) -> None:
        """One wave: N rollouts of each item, their rewards, and the groups dynamic sampling keeps, into `out`."""
        from ..reward import is_timeout, is_verifier_error, score_rollouts

        ds = self.train["dynamic_sampling"]
        start = time.perf_counter()
        groups = self.engine.sample(
            [i["prompt"] for i in items],
            self.plan.n,
            self.train["rollout_temperature"],
            self.train["rollout_top_p"],
            self.max_tokens,
            seed=derived_seed(self.plan.seed, step, round_),
        )
        gen_s = time.perf_counter() - start
        flat_items = [item for item in items for _ in range(self.plan.n)]
        flat = [r for group in groups for r in group]
        scores = score_rollouts(
            flat_items,
            [as_scored(r.text, self.engine.engine.reasoning_opened) for r in flat],  # brorl.scoring.reasoning
            truncated=[r.finish_reason == "length" for r in flat],
            truncated_reward=self.train["reward"]["truncated"],
            code_reward=self.train["reward"]["code"],
            code_timeout_s=self.train["reward"]["code_timeout_s"],
            pool=self._scoring_pool(),
        )
        reward_s = time.perf_counter() - start - gen_s
        out.gen_s, out.reward_s = out.gen_s + gen_s, out.reward_s + reward_s
        out.reward_errors += sum(is_verifier_error(s) for s in scores)
        out.reward_timeouts += sum(is_timeout(s) for s in scores)
        reward = np.array([s.score for s in scores]).reshape(len(items), self.plan.n)
        correct = np.array([float(s.correct) for s in scores]).reshape(len(items), self.plan.n)
        keep = keep_groups(correct, *ds["score_range"]) if ds["enabled"] else np.ones(len(items), bool)
        out.generated_prompts += len(items)
        out.drawn_ids += [item["id"] for item in flat_items]
        out.drawn_correct += correct.reshape(-1).tolist()
        out.generated_samples += len(flat)
        out.reward_sum += float(reward.sum())
        out.score_sum += float(correct.sum())
        out.length_sum += sum(len(r.response_ids) for r in flat)
        out.truncated += sum(r.finish_reason == "length" for r in flat)
        out.waves.append(Wave(len(items), int(keep.sum()), gen_s + reward_s))
        for g in np.flatnonzero(keep):
            out.groups.append(groups[g])
            out.rewards.append(reward[g])

    def _update(self, step: int, out: StepOutcome) -> dict:
        """Advantages, old/reference logprobs and the mini-batch updates on the kept groups."""
        from .batch import build_batch

        rewards = np.array(out.rewards)
        lengths = np.array([[len(r.response_ids) for r in g] for g in out.groups])
        adv = advantages(
            self.plan.advantage_estimator,
            rewards,
            lengths,
            self.train["advantage_std_norm"],
            self.train["advantage_batch_norm"],
        )
        flat = [r for g in out.groups for r in g]
        pad = self.engine.tokenizer.pad_token_id or 0
        batch = build_batch(
            [r.prompt_ids for r in flat],
            [r.response_ids for r in flat],
            [r.logprobs for r in flat],
            adv.reshape(-1).tolist(),
            pad,
        )
        timings = {}
        start = time.perf_counter()
        old = self.trainer.score_logprobs(batch)
        ref = self.trainer.score_logprobs(batch, reference=True) if self.trainer.reference is not None else None
        timings["logprob_s"] = time.perf_counter() - start
        order = np.random.default_rng([self.plan.seed, step, 7]).permutation(len(flat))
        minibatches = [
            list(map(int, part)) for part in np.array_split(order, self.plan.mini_batches_per_step) if len(part)
        ]
        start = time.perf_counter()
        stats = {}
        for _ in range(self.train["ppo_epochs"]):
            stats = self.trainer.update(batch, old, ref, minibatches)
        timings["update_s"] = time.perf_counter() - start
        timings["reload_s"] = self.engine.load_weights(self.trainer.policy.state_dict().items())
        return {**stats, **timings, "adv_rms": token_rms(adv, lengths)}

    def _step(self, step: int, segment: Segment) -> tuple[dict, list[dict]]:
        """One step: its metrics record and its drawn prompts (brorl.training.step_prompts)."""
        start = time.perf_counter()
        lr = lr_at(
            step, self.plan.lr, self.plan.continued_steps, self.train["lr_scheduler"], self.train["lr_warmup_steps"]
        )
        self.trainer.set_lr(lr)
        out = self._generate(step)
        update = {"kl": None, "entropy": None, "vllm_kl": None, "is_filter_ratio": None}
        update |= {"adv_rms": None, "grad_norm": None, "logprob_s": 0.0, "update_s": 0.0, "reload_s": 0.0}
        if out.groups:  # every group dropped after max_rounds: nothing to learn from this step (recorded)
            update = self._update(step, out)
        step_s = time.perf_counter() - start
        self.wall_s += step_s
        samples = len(out.groups) * self.plan.n
        record = {
            "step": step,
            "segment": segment.index,
            "launch": None,  # wall_s sums step_s: a relaunch's start-up never enters it
            "wall_s": self.wall_s,
            "step_s": step_s,
            "overhead_s": None,  # saves and start-up are not timed here (wall_s sums step_s)
            "reward_errors": out.reward_errors,
            "reward_timeouts": out.reward_timeouts,
            "prompts": len(out.groups),
            "samples": samples,
            "generated_prompts": out.generated_prompts,
            "generated_samples": out.generated_samples,
            "dynamic_sampling_pass_rate": samples / out.generated_samples,
            "reward_mean": out.reward_sum / out.generated_samples,
            "score_mean": out.score_sum / out.generated_samples,
            "kl": update["kl"],
            "vllm_kl": update["vllm_kl"],
            "is_filter_ratio": update["is_filter_ratio"],
            "entropy": update["entropy"],
            "response_len_mean": out.length_sum / out.generated_samples,
            "truncated_frac": out.truncated / out.generated_samples,
            "trained_truncated_frac": None,  # the rule below reads vLLM's finish reason: nothing to cross-check
            "trained_zeroed_frac": None,
            "gen_samples_per_s": out.generated_samples / out.gen_s if out.gen_s else None,
            "lr": lr,
            "adv_rms": update["adv_rms"],
            "grad_norm": update["grad_norm"],
            "refill": self.train["dynamic_sampling"]["refill"] if self.train["dynamic_sampling"]["enabled"] else None,
            "waves": [wave.record() for wave in out.waves],
            "gen_s": out.gen_s,
            "reward_s": out.reward_s,
            "logprob_s": update["logprob_s"],
            "partition_s": None,  # micro-batches of a fixed size: nothing is partitioned
            "update_s": update["update_s"],
            "reload_s": update["reload_s"],
            "gpu_mem_peak_gib": None,  # the CPU engine
            "vllm_preemptions": None,  # its one in-process engine logs no periodic stats
        }
        return record, step_prompts.prompt_counts(out.drawn_ids, out.drawn_correct)

    def _commit(self, step: int, record: dict, prompts: list[dict]) -> None:
        """Export (saved steps), then the step's prompts and metrics lines, then the full state: see the module
        docstring."""
        policy = self.trainer.policy
        if step in self.plan.saved_steps:
            run_state.export_hf(policy, self.start_model, self.run_dir / "exports" / f"step{step}")
        step_prompts.append_step(self.prompts_path, step, prompts)
        metrics_io.append_metrics(self.metrics_path, record)
        run_state.save_state(
            self.run_dir,
            step,
            {
                "step": step,
                "policy": policy.state_dict(),
                "optimizer": self.trainer.optimizer.state_dict(),
                "cursor": self.stream.cursor(),
                "wall_s": self.wall_s,
                "ref_step": self.ref_step,
            },
        )

    def run_segment(
        self, index: int, stop_after: int | None = None, tracking: Tracking | None = None, stop: Any = None
    ) -> list[dict]:
        """Run segment `index` from the committed step to its last step; returns its metrics records.
        `stop_after` ends early after that step (tests of resumption); `tracking` also sends each committed step's
        record to W&B and TensorBoard (config `logging`; default: off); `stop` (brorl.training.stop.StopRequests)
        ends it after a saved step when the time limit is near or SIGTERM came (every step is saved whole: _commit)."""
        from tqdm import tqdm

        segment = self.plan.segments[index]
        # before anything else, also for a finished run: a changed recipe must never pass for the old one
        check_fingerprint(self.run_dir, recipe_fingerprint(self.config, self.arm))
        committed = run_state.latest_step(self.run_dir) or 0
        if committed < segment.last_step:
            committed = self._setup(segment)
            steps = range(max(committed + 1, segment.first_step), segment.last_step + 1)
            bar = tqdm(steps, desc=f"train {self.arm} segment {index}", unit="step", disable=not self.progress)
            try:
                with SegmentLogger(tracking or Tracking(), self.arm, index, self.run_dir, self.config) as logger:
                    for step in bar:
                        record, prompts = self._step(step, segment)
                        saving = time.perf_counter()
                        self._commit(step, record, prompts)
                        save_s = time.perf_counter() - saving
                        logger.log(record)
                        bar.set_postfix(
                            reward=f"{record['reward_mean']:.3f}", kept=f"{record['dynamic_sampling_pass_rate']:.2f}"
                        )
                        if stop_after is not None and step >= stop_after:
                            break
                        if stop is not None and stop.after_step(record["step_s"], save_s):
                            print(f"stopped after step {step} ({stop.reason}): it is saved", flush=True)
                            break
            finally:
                if self._pool is not None:
                    self._pool.close()
                    self._pool = None
        records = [r for r in metrics_io.read_metrics(self.metrics_path) if r["step"] in segment.steps]
        return records
