"""Running Snakemake as `make` does, with a profile and extra config files: the profile's own config files (a
--configfile on the command line replaces them, so they are passed again), Snakemake's --directory made absolute,
and `python -m brorl.ops.run.run_profile report`, the HTML report of any run (`make report`)."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[4]
PROFILES = {"slurm": "slurm", "local": "profiles/local"}  # make's PROFILE= names; anything else is a folder


def profile_configfiles(profile: Path) -> list[Path]:
    """The config files a Snakemake profile names (`configfile:`), which a --configfile on the command line replaces."""
    settings = yaml.safe_load((profile / "config.yaml").read_text(encoding="utf-8")) or {}
    files = settings.get("configfile") or []
    return [Path(f) for f in ([files] if isinstance(files, str) else files)]


def lost_preset(config: dict, configfiles: list) -> str:
    """Why a run refuses its config files: its profile's preset (config profile_preset, set by profiles/local) is
    not among them, because a --configfile on the command line replaced the profile's; "" when it is there."""
    preset = config.get("profile_preset")
    # the preset of this checkout or of a copy of it (tests run copies): the same path under the repository
    if not preset or any(Path(f).resolve().as_posix().endswith("/" + preset.lstrip("./")) for f in configfiles):
        return ""
    given = " ".join(str(f) for f in configfiles) or "none"
    return (
        f"this profile runs the preset {preset}, but the command line's --configfile ({given}) replaced it (Snakemake "
        f"replaces a profile's configfile), so the run would plan the paper's experiment: pass the preset first, "
        f"--configfile {preset} {given if configfiles else ''}".rstrip()
        + " (`make demo ARGS='--configfile over.yaml'` adds the preset itself)"
    )


def absolute_directory(snakemake_args: list[str], cwd: Path) -> list[str]:
    """Snakemake's arguments with its --directory/-d made absolute (Snakemake runs from the repository root)."""
    out, args = [], iter(snakemake_args)
    for arg in args:
        if arg in ("--directory", "-d"):
            out += ["--directory", str((cwd / next(args, ".")).resolve())]
        elif arg.startswith("--directory="):
            out += ["--directory", str((cwd / arg.split("=", 1)[1]).resolve())]
        else:
            out.append(arg)
    return out


def workdir_of(snakemake_args: list[str], cwd: Path) -> Path:
    """The run's working directory: Snakemake's --directory among its (absolute_directory) arguments, else cwd."""
    for flag, value in zip(snakemake_args, snakemake_args[1:]):
        if flag == "--directory":
            return Path(value)
    return cwd


def option_values(snakemake_args: list[str], names: tuple[str, ...]) -> list[str]:
    """The values that follow any of the options `names` among Snakemake's arguments (each may take several)."""
    out, taking = [], False
    for arg in snakemake_args:
        if arg in names:
            taking = True
        elif arg.startswith("-"):
            taking = False
        elif taking:
            out.append(arg)
    return out


def is_dry_run(snakemake_args: list[str]) -> bool:
    """Whether Snakemake's arguments ask for a dry run (which submits and runs nothing)."""
    return any(arg in ("-n", "--dry-run", "--dryrun") for arg in snakemake_args)


def run_configfiles(profile: str, extra: list[str], cwd: Path) -> list[Path]:
    """The config files of a run: the profile's (from the repository root), then `extra` (from cwd)."""
    return [ROOT / f for f in profile_configfiles(ROOT / profile)] + [(cwd / f).resolve() for f in extra if f]


def report(argv: list[str] | None = None) -> int:
    """`make report`: snakemake --report of the run in --directory (default here) with its profile and config."""
    parser = argparse.ArgumentParser(prog="python -m brorl.ops.run.run_profile report", description=report.__doc__)
    parser.add_argument("--profile", default="local", help="slurm, local or a profile folder (the run's)")
    parser.add_argument("--configfile", nargs="*", default=[], help="the run's config files beyond the profile's")
    parser.add_argument("--snakemake", default="snakemake", help="the Snakemake executable")
    parser.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --: Snakemake's own arguments")
    args = parser.parse_args(argv)
    cwd = Path.cwd()
    extra = absolute_directory([a for a in args.snakemake_args if a != "--"], cwd)
    results = workdir_of(extra, cwd) / "results"
    if not (results / "SUMMARY.md").is_file():
        print(
            f"make report: no finished run under {results} (make demo, snakemake --profile slurm or make evaluate first; "
            "SUBMIT_ARGS=--directory <folder> for a run elsewhere)",
            file=sys.stderr,
        )
        return 1
    profile = PROFILES.get(args.profile, args.profile)
    configs = [str(p) for p in run_configfiles(profile, args.configfile, cwd)]
    out = results / "report.html"
    cmd = [args.snakemake, "--profile", profile, "--configfile", *configs, *extra, "--report", str(out)]
    print(f"running: {shlex.join(cmd)}", flush=True)
    status = subprocess.run(cmd, cwd=ROOT).returncode
    if status == 0:
        print(f"report: {out}")
    return status


if __name__ == "__main__":
    if sys.argv[1:2] != ["report"]:
        sys.exit(
            "usage: python -m brorl.ops.run.run_profile report [--profile P] [--configfile F ...] [-- snakemake args]"
        )
    sys.exit(report(sys.argv[2:]))
