"""Evaluation stage: score generated samples with the verifiers, summarize them per (arm, step, benchmark) with the
paper's protocol (pass@1 = mean over samples, averaged over problems; unbiased pass@k) and collect the tables.

Generation lives in brorl.generation; this package never imports it, so a verifier change reruns scoring only.
"""
