"""The OpenRLHF engine (`engine: cluster`): one segment per job, run by OpenRLHF 0.11.2 on the job's Ray cluster.

  run.py         one segment: checks, dataset, checkpoint repair, launch and stop, metrics (entry point: run_segment)
  command.py     the ONE place that builds the `train_ppo_ray` command
  validate.py    configs OpenRLHF would refuse, rejected first, naming the key
  parse.py       the command through OpenRLHF's real parser
  dataset.py     the train mix in OpenRLHF's prompt format
  checkpoint.py  what OpenRLHF and DeepSpeed left on disk, repaired before a resume
  logs.py        OpenRLHF's tensorboard and our reward log -> metrics.jsonl records
  cli.py         the cluster-check and cluster-command subcommands
Import the modules themselves: this file imports nothing.
"""
