"""PPO training for each arm: the derived recipe (recipe), the reward function shared by both engines (reward),
the per-step metrics schema (metrics), the embedded CPU engine and the OpenRLHF command for the cluster."""
