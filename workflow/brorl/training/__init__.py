"""PPO training for each arm. Shared by both engines, at this level: the derived recipe (recipe), the reward
(reward), the per-step metrics schema (metrics), segment manifests and exports (segments), the run folder's atomic
writes (run_folder), and the command line (cli, which picks an engine from its ENGINES table). One subpackage per
engine: embedded/ (the CPU engine, tiny scale) and openrlhf/ (OpenRLHF on a Ray cluster, paper scale)."""
