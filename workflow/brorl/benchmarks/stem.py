"""SCP-116K rows -> STEM train records (the ProRL STEM family).

SCP-116K has no short answer field: each row holds a problem, the solution matched in the source text
(``matched_solution``) and two model solutions (o1-mini, QwQ) with flags saying whether each agrees with the
matched one. The reference answer is the last \\boxed{} of the matched solution, else of a model solution that the
data itself flags as agreeing with it. ProRL additionally kept only problems where a GPT-4o judge found
DeepSeek-R1's answer consistent with the ground truth; that judge cannot be rerun here, so only this deterministic
part is applied. A row without a checkable answer is dropped and counted by reason (never silently).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..scoring.math import last_boxed
from .records import new_record
from .registry import MATH_SUFFIX

# where the reference answer may come from, in order: (solution field, the flag that it agrees with the source)
ANSWER_FIELDS = (
    ("matched_solution", None),
    ("qwq_solution", "is_qwq_solution_same_with_matched_solution"),
    ("o1_solution", "is_o1_solution_same_with_matched_solution"),
)


def reference_answer(row: dict) -> tuple[str | None, str]:
    """The row's reference answer and the field it came from, or (None, the reason there is none)."""
    for field, flag in ANSWER_FIELDS:
        text = row.get(field)
        if not isinstance(text, str) or (flag is not None and row.get(flag) is not True):
            continue
        answer = last_boxed(text)
        if answer is not None and answer.strip():
            return answer.strip(), field
    if not isinstance(row.get("matched_solution"), str) or not row["matched_solution"].strip():
        return None, "no matched_solution"
    return None, "no boxed answer in the matched solution or in an agreeing model solution"


def stem_records(
    rows: Iterable[tuple[int, dict]], source_name: str, origin: str
) -> tuple[list[dict], dict[str, list[int]]]:
    """Train records of the (line, row) pairs with a checkable answer, and the dropped lines by reason."""
    records, dropped = [], {}
    for line, row in rows:
        problem = row.get("problem")
        if not isinstance(problem, str) or not problem.strip():
            dropped.setdefault("no problem text", []).append(line)
            continue
        answer, where = reference_answer(row)
        if answer is None:
            dropped.setdefault(where, []).append(line)
            continue
        meta = {
            "line": line,
            "file": origin,
            "domain": row.get("domain"),
            "answer_from": where,
            "problem": problem.strip(),
        }
        records.append(new_record(source_name, line, "stem", f"{problem.strip()} {MATH_SUFFIX}", meta, answer=answer))
    return records, dropped
