"""Digests of source files that ignore what cannot change behaviour: a rule's rerun trigger hashes these.

A Python module is hashed through its syntax tree, serialised here rather than with ``ast.dump`` (whose output differs
between Python 3.11 and 3.12: 3.12 adds ``type_params=[]`` to every function and class), with docstrings and every
other bare string statement dropped: comments, docstrings, line breaks, parentheses and trailing commas change no
digest. YAML and JSON data are hashed as their parsed value (a comment changes nothing); any other file by its bytes.
Standard library only, plus PyYAML for YAML files (the driver environment has it: the config is YAML).
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from .source_cache import cached

DIGEST_CHARS = 12  # shown in params and rerun reasons; the full SHA-256 is never needed to tell two versions apart

# Node fields that carry no behaviour: string prefix kinds (u"..."), type comments.
_IGNORED_FIELDS = frozenset({"kind", "type_comment"})


def _is_bare_string(node: ast.AST) -> bool:
    """A statement that is only a string literal: a docstring, or a string used as a comment."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_empty_part(owner: ast.AST, part: object) -> bool:
    """An empty literal part of an f-string: 3.12 writes one where a format spec ends with a field, 3.11 does not."""
    return isinstance(owner, ast.JoinedStr) and isinstance(part, ast.Constant) and part.value == ""


def _serialise(node: object, out: list[str]) -> None:
    """Append a canonical text of ``node`` to ``out``: node type, then each non-empty field by name."""
    if isinstance(node, ast.AST):
        out.append(type(node).__name__ + "(")
        for name in node._fields:
            if name in _IGNORED_FIELDS:
                continue
            value = getattr(node, name, None)
            if isinstance(value, list):
                value = [v for v in value if not _is_bare_string(v) and not _is_empty_part(node, v)]
            if value is None or value == []:
                continue  # 3.12+ adds empty fields (type_params) that 3.11 lacks
            out.append(name + "=")
            _serialise(value, out)
            out.append(",")
        out.append(")")
    elif isinstance(node, list):
        out.append("[")
        for item in node:
            _serialise(item, out)
            out.append(";")
        out.append("]")
    else:
        out.append(repr(node))


def python_text(source: str | bytes, filename: str = "<source>") -> str:
    """The canonical text of a module's syntax tree (what its digest is taken of)."""
    out: list[str] = []
    _serialise(ast.parse(source, filename=filename), out)
    return "".join(out)


def _data_text(path: Path) -> str:
    """A YAML or JSON file as canonical JSON of its value."""
    text = path.read_text()
    if path.suffix == ".json":
        value = json.loads(text)
    else:
        import yaml

        value = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: faster
    return json.dumps(value, sort_keys=True, default=str)


def _digest_now(path: Path) -> str:
    if path.suffix == ".py":
        body = python_text(path.read_bytes(), str(path)).encode()
    elif path.suffix in {".yaml", ".yml", ".json"}:
        body = _data_text(path).encode()
    else:
        body = path.read_bytes()
    return hashlib.sha256(body).hexdigest()[:DIGEST_CHARS]


def file_digest(path: Path) -> str:
    """The digest of one source or data file (kept per file version across processes: brorl.reporting.source_cache)."""
    return cached(path, "digest", _digest_now)


def shell_digest(command: str) -> str:
    """The digest of a rule's shell template with all whitespace collapsed: a new flag changes it, indentation or a
    wrapped line does not."""
    return hashlib.sha256(" ".join(command.split()).encode()).hexdigest()[:DIGEST_CHARS]


def combined_digest(parts: dict[str, str]) -> str:
    """One digest for a set of (name -> digest) parts, independent of their order."""
    text = "\n".join(f"{name} {digest}" for name, digest in sorted(parts.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]
