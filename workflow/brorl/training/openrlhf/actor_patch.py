"""Replacing a method of a Ray actor class where Ray looks it up.

`@ray.remote` builds a subclass of the class (Ray 2.55 `ray.actor._modify_class`) and wraps every method of it for
tracing (`_inject_tracing_into_class`) at decoration time, capturing the methods as they were then. The actor's
methods run through that subclass: a patch of the original class after the import (`__ray_actor_class__`) changes
what direct calls see but not what Ray runs. So each job-hook patch of an actor method goes on both: the original
class and the subclass in the ActorClass's metadata, where it wraps Ray's traced wrapper. In a Ray worker the class
is imported again (the job hook patches it there too) or unpickled from the driver's patched subclass."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def actor_classes(ray_class: Any) -> list[type]:
    """The classes whose method a call of this (possibly @ray.remote) class runs: the original, and Ray's subclass."""
    classes = [getattr(ray_class, "__ray_actor_class__", ray_class)]
    metadata = getattr(ray_class, "__ray_metadata__", None)
    if metadata is not None:
        classes.append(metadata.modified_class)
    return classes


def patch_actor_method(ray_class: Any, name: str, wrap: Callable[[Callable], Callable], marker: str) -> None:
    """Set method `name` to wrap(current method) on every class of actor_classes, once (`marker` flags a wrapper)."""
    for cls in actor_classes(ray_class):
        current = getattr(cls, name)
        if getattr(current, marker, False):
            continue
        wrapper = wrap(current)
        setattr(wrapper, marker, True)
        setattr(cls, name, wrapper)
