"""Llama-Nemotron instruction-following rows -> instruction_following train records (the ProRL IF family).

A row of ``RL/instruction_following/instruction_following.jsonl`` holds the request as ``input`` (a list with one
user message) and the checks as ``args.instruction_id_list`` / ``args.instruction_kwargs`` (IFEval ids and their
arguments). The record keeps them as ``metadata.instruction_id_list`` / ``metadata.kwargs`` (IFEval's names), null
arguments removed. A row whose request is missing, whose ids are unknown to the IFEval checkers or whose arguments a
checker rejects is dropped and counted by reason and line (never silently).
"""

from __future__ import annotations

from collections.abc import Iterable

from .records import new_record


def request_text(row: dict) -> str | None:
    """The user's request: the last user message of ``input`` (or ``input`` itself when it is a string)."""
    value = row.get("input")
    if isinstance(value, list):
        users = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        value = users[-1] if users else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def row_problems(row: dict) -> tuple[list[str], list[dict], str | None]:
    """(ids, kwargs, None) of a usable row, or ([], [], the reason it is not)."""
    from ..scoring.instructions import clean_kwargs, instruction_problems

    args = row.get("args")
    if not isinstance(args, dict):
        return [], [], "no args object"
    ids, kwargs = args.get("instruction_id_list"), args.get("instruction_kwargs")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        return [], [], "no instruction_id_list"
    kwargs = [{} if k is None else k for k in (kwargs if isinstance(kwargs, list) else [])]
    if len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        return [], [], "malformed instruction_kwargs (not one object per instruction id)"
    kwargs = [clean_kwargs(k) for k in kwargs]
    problems = instruction_problems(ids, kwargs)
    if problems:
        return (
            [],
            [],
            ("unknown instruction id" if problems[0].startswith("unknown") else "arguments a checker rejects"),
        )
    return ids, kwargs, None


def instruction_records(
    rows: Iterable[tuple[int, dict]], source_name: str, origin: str
) -> tuple[list[dict], dict[str, list[int]]]:
    """Train records of the (line, row) pairs that the IFEval checkers can grade, and the dropped lines by reason."""
    from ..scoring.instructions import check_ready

    check_ready()  # before any row: a machine without the checkers' data must not drop every row as unusable
    records, dropped = [], {}
    for line, row in rows:
        request = request_text(row)
        ids, kwargs, reason = row_problems(row) if request else ([], [], "no user request in input")
        if reason:
            dropped.setdefault(reason, []).append(line)
            continue
        meta = {"line": line, "file": origin, "problem": request, "instruction_id_list": ids, "kwargs": kwargs}
        records.append(new_record(source_name, line, "instruction_following", request, meta))
    return records, dropped
