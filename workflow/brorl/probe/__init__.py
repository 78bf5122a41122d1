"""The mass-balance probe (docs/stages.md#the-mass-balance-probe): a fixed set of held-out problems sampled at the
rollout temperature at every saved step of every arm, so that the pass rate of each single problem (the paper's
Q_pos(x) for one prompt) can be followed through real training, the LLM analogue of Figure 3."""
