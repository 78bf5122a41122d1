"""Running the workflow, not computing in it: which jobs are sbatch submissions (submission), Snakemake with a profile
(run_profile), the GPU software route check (software_route), evaluating any checkpoint (any_checkpoint), where a run
stands (status), where its time went (timings) and the start/failure/success notifications (notify)."""
