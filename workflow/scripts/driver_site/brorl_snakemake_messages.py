"""Snakemake's own messages for a config file it cannot load, reworded to name the file, the line and the fix.

Snakemake 9.27.1 reads every `--configfile` before the Snakefile runs (snakemake.settings.types.ConfigSettings), so
the workflow cannot word these errors itself: a YAML syntax error reads "Config file is not valid JSON or YAML" (no
file, no line), an empty file "must be given as JSON or YAML with keys at top level" (no file), a missing file is a
Python traceback. `make setup` puts a .pth file in the environment (.venv, and .venv-slurm for the Slurm driver)
that imports this module at start-up; it wraps `load_configfile` once Snakemake's settings module is imported and
changes nothing else. A file that loads is loaded by Snakemake's own function, unchanged.
"""

from __future__ import annotations

from pathlib import Path

from brorl_after_import import after_import

TARGET = "snakemake.settings.types"


def config_problem(path: Path) -> str:
    """Why ``path`` is no config file Snakemake can load ("" when it is), naming the file, the line and the fix."""
    if not path.is_file():
        presets = sorted(p.name for p in Path("workflow/presets").glob("*.yaml"))
        known = f" (workflow/presets/ holds: {', '.join(presets)})" if presets else ""
        return f"config file {path} does not exist{known}: check the path given to --configfile"
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        return (
            f"config file {path} is empty: give it keys at top level (e.g. `evaluation: {{seed: 0}}`) or leave it out"
        )
    import yaml

    try:  # libyaml's parser first (fast: every job reads its config files); the Python one words the error
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        data = None
    try:
        data = yaml.safe_load(text) if data is None else data
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(err, "problem", None) or str(err).splitlines()[0]
        return f"config file {path}{where}: not valid YAML ({what}): fix that line"
    if not isinstance(data, dict):
        return (
            f"config file {path} holds a {type(data).__name__}, not keys at top level: write it as `key: value` lines"
        )
    return ""


def _wrap(module) -> None:
    from snakemake_interface_common.exceptions import WorkflowError

    original = module.load_configfile

    def load_configfile(configpath):
        problem = config_problem(Path(configpath))
        if problem:
            raise WorkflowError(problem)
        return original(configpath)

    module.load_configfile = load_configfile


after_import(TARGET, _wrap)
