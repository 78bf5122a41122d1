"""Import-only stand-in for flash_attn on CPU machines (see ../README.md); calling anything raises."""

__version__ = "0.0.0+cpu-stub"


def _unavailable(*args, **kwargs):
    raise NotImplementedError("flash_attn is not available on this CPU machine (import-only stub)")


flash_attn_func = flash_attn_varlen_func = _unavailable
