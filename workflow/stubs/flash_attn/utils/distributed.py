"""Import-only stand-in (see ../../README.md)."""

from flash_attn import _unavailable

all_gather = _unavailable
