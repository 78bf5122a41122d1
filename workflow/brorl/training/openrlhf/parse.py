"""Run a `train_ppo_ray` argv through the REAL argument parser and post-parse checks of the installed OpenRLHF.

The `if __name__ == "__main__":` block of the installed `openrlhf/cli/train_ppo_ray.py` is taken from its source
text and executed as is, with two changes: its last statement `train(args)` (which starts Ray) is replaced by
handing `args` back, and `hierarchize` is loaded from `openrlhf/utils/config.py` directly (the package
`openrlhf.utils` imports deepspeed and transformers, ~10 s, and nothing of it is needed to parse). Of the module's
top-level imports only the standard-library ones run (the block uses argparse, os and datetime; ray, vllm and the
trainer are not imported).
So every flag, default, choice, type and assertion is OpenRLHF's own, and a parse takes milliseconds.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import importlib.util
import io
import sys
import threading
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

PINNED_VERSION = (
    "0.11.2"  # the flags below were checked against this release only (docs/design.md#openrlhf-is-pinned-to-0112)
)
_ARGV_LOCK = threading.Lock()  # sys.argv is process-global


class OpenRLHFArgError(ValueError):
    """An argv that OpenRLHF's parser or its post-parse assertions reject (the message is OpenRLHF's)."""


def _package_dir() -> Path:
    spec = importlib.util.find_spec("openrlhf")
    if spec is None or not spec.submodule_search_locations:
        raise OpenRLHFArgError("openrlhf is not installed (pip install --no-deps openrlhf==0.11.2, see envs/)")
    return Path(list(spec.submodule_search_locations)[0])


def installed_version() -> str:
    return importlib.metadata.version("openrlhf")


@lru_cache(maxsize=1)
def _main_block() -> tuple[object, object]:
    """(compiled __main__ block of train_ppo_ray.py with train(args) replaced, hierarchize function)."""
    version = installed_version()
    if version != PINNED_VERSION:
        raise OpenRLHFArgError(
            f"installed openrlhf is {version}, the command builder targets {PINNED_VERSION} exactly "
            "(its CLI renamed flags in 0.10.2 and 0.11.2)"
        )
    source_path = _package_dir() / "cli" / "train_ppo_ray.py"
    tree = ast.parse(source_path.read_text(), filename=str(source_path))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    ]
    if len(blocks) != 1:
        raise OpenRLHFArgError(f"{source_path}: expected one `if __name__ == '__main__'` block, found {len(blocks)}")
    body = list(blocks[0].body)
    last = body[-1]
    if not (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Name)
        and last.value.func.id == "train"
    ):
        raise OpenRLHFArgError(f"{source_path}: the __main__ block no longer ends with train(args)")
    body[-1] = ast.parse("__brorl_parsed__ = args").body[0]
    # `from openrlhf.utils.config import hierarchize` -> use the copy loaded below (same file, no package import)
    body = [node for node in body if not (isinstance(node, ast.ImportFrom) and node.module == "openrlhf.utils.config")]
    # the module's standard-library imports (argparse, os, datetime) run; ray, vllm and openrlhf ones do not
    light = [
        node
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom)) and all(_stdlib(name) for name in _imported_roots(node))
    ]
    module = ast.Module(body=[*light, *body], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, str(source_path), "exec")
    spec = importlib.util.spec_from_file_location("_brorl_openrlhf_config", _package_dir() / "utils" / "config.py")
    config_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config_module)
    return code, config_module.hierarchize


def _imported_roots(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [(node.module or "").split(".")[0]]
    return [alias.name.split(".")[0] for alias in node.names]


def _stdlib(name: str) -> bool:
    return name in sys.stdlib_module_names


def parse_argv(argv: list[str]) -> tuple[SimpleNamespace, str]:
    """(OpenRLHF's nested args, its printed warnings) for `python -m openrlhf.cli.train_ppo_ray <argv>`.

    argv excludes the program name. Raises OpenRLHFArgError with OpenRLHF's own message (argparse error or a failed
    assertion).
    """
    if argv and argv[0].endswith(("train_ppo_ray", "train_ppo_ray.py")):
        raise OpenRLHFArgError("pass the flags only, without the program or module name")
    code, hierarchize = _main_block()
    namespace = {"__name__": "__main__", "hierarchize": hierarchize}
    out, err = io.StringIO(), io.StringIO()
    with _ARGV_LOCK:
        saved = sys.argv
        sys.argv = ["train_ppo_ray.py", *argv]
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(code, namespace)  # noqa: S102 - OpenRLHF's own source, see the module docstring
        except SystemExit as stop:  # argparse: unknown flag, bad value, missing argument
            message = err.getvalue().strip().splitlines()
            raise OpenRLHFArgError(
                f"OpenRLHF {PINNED_VERSION} rejects the command: {message[-1] if message else f'exit {stop.code}'}"
            ) from None
        except AssertionError as failed:
            raise OpenRLHFArgError(f"OpenRLHF {PINNED_VERSION} assertion failed: {failed}") from None
        finally:
            sys.argv = saved
    return namespace["__brorl_parsed__"], out.getvalue()


def to_dict(args: SimpleNamespace) -> dict:
    """Nested plain dict of parsed args (for JSON dumps and comparisons)."""
    return {k: to_dict(v) if isinstance(v, SimpleNamespace) else v for k, v in vars(args).items()}
