"""Developer speed benchmarks of the paper's stages (`make bench-*`): timings, never results."""
