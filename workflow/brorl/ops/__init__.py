"""The operations wing: what plans, checks, submits and watches a run of the paper (nothing here computes a
result; the paper's stages import none of it)."""
