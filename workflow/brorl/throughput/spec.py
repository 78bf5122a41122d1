"""What one throughput measurement is (a prompts x N layout and a prefix-caching setting) and its file name.

Name grammar (results/throughput/<name>.json): ``p{prompts}_n{n}_pc{on|off}``, e.g. ``p512_n16_pcon`` is
512 prompts x 16 samples each with prefix caching on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME_RE = re.compile(r"^p(?P<prompts>[1-9]\d*)_n(?P<n>[1-9]\d*)_pc(?P<pc>on|off)$")


@dataclass(frozen=True)
class Configuration:
    """One measured configuration: ``prompts`` distinct prompts, ``n`` samples each, prefix caching on or off."""

    prompts: int
    n: int
    prefix_caching: bool

    def __post_init__(self) -> None:
        if int(self.prompts) != self.prompts or self.prompts < 1 or int(self.n) != self.n or self.n < 1:
            raise ValueError(f"prompts and n must be positive integers, got prompts={self.prompts}, n={self.n}")

    @property
    def samples(self) -> int:
        """Samples generated per batch (prompts x n)."""
        return self.prompts * self.n

    @property
    def name(self) -> str:
        return config_name(self.prompts, self.n, self.prefix_caching)

    @property
    def layout(self) -> str:
        """'512x16' (prompts x samples per prompt)."""
        return f"{self.prompts}x{self.n}"


def config_name(prompts: int, n: int, prefix_caching: bool) -> str:
    """``p{prompts}_n{n}_pc{on|off}``."""
    return f"p{int(prompts)}_n{int(n)}_pc{'on' if prefix_caching else 'off'}"


def parse_config_name(name: str) -> Configuration:
    """Inverse of :func:`config_name`; ValueError naming the grammar for anything else."""
    m = NAME_RE.match(name)
    if not m:
        raise ValueError(
            f"throughput configuration name must look like p512_n16_pcon (p<prompts>_n<N>_pc<on|off>), got {name!r}"
        )
    return Configuration(int(m["prompts"]), int(m["n"]), m["pc"] == "on")


def configurations(layouts: list[dict], prefix_caching: list[bool]) -> list[Configuration]:
    """Every layout x prefix-caching setting of the config's ``throughput`` section, in config order."""
    return [Configuration(int(x["prompts"]), int(x["n"]), bool(pc)) for x in layouts for pc in prefix_caching]
