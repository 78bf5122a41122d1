"""The GPU smoke run's verdict (workflow/presets/gpu_smoke.yaml; its CPU form is the rehearsal): what the run
exercised, pass or fail, its time and peak GPU memory per rank, and what to fix (docs/cluster.md#the-gpu-smoke-run)."""
