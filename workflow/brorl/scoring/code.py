"""Score a code response by running its program against the item's tests, in a sandbox.

Item: a dict with ``id, benchmark, family="code", prompt, tests, scorer="code", metadata``.

Normalized ``tests`` format (what `normalize_tests` returns; `score_code` accepts raw formats too)::

    {"inputs": [str, ...], "outputs": [str, ...], "fn_name": str | None}

* ``fn_name is None``: stdin/stdout tests. ``inputs[i]`` is fed to the program's standard input, its standard
  output is compared with ``outputs[i]``.
* ``fn_name`` a string: call-based tests (APPS/TACO ``input_output`` with ``fn_name``, LeetCode style).
  ``inputs[i]`` is a JSON-encoded list of positional arguments (a JSON value that is not a list is passed as the
  single argument) and ``outputs[i]`` the JSON-encoded expected return value. The program's module is executed and
  ``fn_name`` is looked up as a top-level function, else as a method of ``Solution()``.

`normalize_tests` reads the formats found in real data:

* APPS / TACO / Eurus-2-RL ``input_output`` / ``ground_truth``: a JSON string (or dict)
  ``{"inputs": [...], "outputs": [...], "fn_name"?: str}``; for stdin tests an input or output may be a list of
  lines (joined with "\\n"); for call-based tests each input is a list of arguments and each output a value;
* DeepCoder's code_contests.json: a dict (or its Python ``repr`` string) ``{"inputs": [str], "outputs": [str]}``;
* DeepCoder's codeforces.json: a list (or its ``repr``) of ``{"input": str, "output": str}``.

Comparison (stdin/stdout, as APPS): equal after whitespace normalisation (the output split into tokens on any
whitespace must equal the expected tokens), where two tokens that are not both integers also match when both are
numbers within 1e-6 absolute or relative error. Call-based: the return value (tuples as lists) equals the expected
value, or its single element when the expected value is a one-element list (APPS's wrapping), with the same
float tolerance.

Running: one sandboxed harness process per candidate program (brorl.scoring.sandbox; bubblewrap + rlimits). The
harness reads the program and tests from its stdin, runs each test in a forked child (stdin/stdout redirected to
files in the sandbox's private /tmp, so ``input()``, ``sys.stdin.buffer`` and ``open(0)`` all work), with the total
time budget `time_limit_s` (default 5 s, ProRL's cap) for all tests together; over it the program scores 0
("timeout"). Binary reward stops at the first failing test; reward="fraction" runs all tests and scores the
fraction passed (correct only when all pass).

Errors (Score.error): "no_code", "timeout", "memory", "runtime_error", "output_limit", "wrong_answer".
"""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import marshal
import re

from brorl.scoring.reasoning import final_text
from brorl.scoring.result import NO_CODE, Score, failed
from brorl.scoring.sandbox import Limits, run_sandboxed

log = logging.getLogger(__name__)

ERRORS = ("no_code", "timeout", "memory", "runtime_error", "output_limit", "wrong_answer")
STARTUP_GRACE_S = 1.0  # wall time allowed on top of the program's budget for starting the sandbox

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n`]*\n(.*?)```", re.DOTALL)
_PY_TAGS = {"", "python", "py", "python3", "py3"}


def extract_code(response: str) -> str | None:
    """The last fenced ```python / ```py / bare ``` block of the answer (the text after the last ``</think>``);
    None when the reasoning was cut off (``<think>`` without ``</think>``) or there is no such block."""
    text = final_text(response) if isinstance(response, str) else None
    if text is None:
        return None
    blocks = [body for tag, body in _FENCE.findall(text) if tag.lower() in _PY_TAGS]
    if not blocks or not blocks[-1].strip():
        return None
    return blocks[-1]


def _parse_raw(raw):
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode()
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
        try:
            return ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise ValueError(f"tests: a string that is neither JSON nor a Python literal ({exc})") from None
    return raw


def _stdio_text(value, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    raise ValueError(f"tests: {where} must be a string (or a list of lines), got {type(value).__name__}")


def _json_text(value, where: str) -> str:
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            raise ValueError(f"tests: {where} of a call-based test is a string that is not JSON") from None
        return value
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tests: {where} of a call-based test cannot be JSON-encoded ({exc})") from None


def normalize_tests(raw) -> dict:
    """Convert raw tests (see the module docstring) to ``{"inputs", "outputs", "fn_name"}``; ValueError if
    malformed."""
    data = _parse_raw(raw)
    if isinstance(data, list):
        inputs, outputs = [], []
        for i, case in enumerate(data):
            if not isinstance(case, dict) or "input" not in case or "output" not in case:
                raise ValueError(f"tests: case {i} of the list is not a dict with 'input' and 'output'")
            inputs.append(case["input"])
            outputs.append(case["output"])
        fn_name = None
    elif isinstance(data, dict):
        if "inputs" not in data or "outputs" not in data:
            raise ValueError(f"tests: dict without 'inputs' and 'outputs' (keys: {sorted(data)[:8]})")
        inputs, outputs = data["inputs"], data["outputs"]
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise ValueError("tests: 'inputs' and 'outputs' must be lists")
        fn_name = data.get("fn_name") or None
        if fn_name is not None and not isinstance(fn_name, str):
            raise ValueError(f"tests: fn_name must be a string, got {type(fn_name).__name__}")
    else:
        raise ValueError(f"tests: expected a dict or a list of cases, got {type(data).__name__}")
    if len(inputs) != len(outputs):
        raise ValueError(f"tests: {len(inputs)} inputs but {len(outputs)} outputs")
    if not inputs:
        raise ValueError("tests: no test cases")
    conv = _stdio_text if fn_name is None else _json_text
    return {
        "inputs": [conv(v, f"input {i}") for i, v in enumerate(inputs)],
        "outputs": [conv(v, f"output {i}") for i, v in enumerate(outputs)],
        "fn_name": fn_name,
    }


# The harness, run as `python -I -S -B -c HARNESS` inside the sandbox. Stdin: JSON {code, inputs, outputs,
# fn_name, budget_s, stop_on_fail} in marshal format. Stdout: one line "<i> ok|<error>" per test, then "-1 done".
HARNESS = r"""
import builtins, errno, marshal, math, os, select, sys, time
RE, MEM, OLIM = 97, 98, 99
SIGKILL, SIGXCPU, SIGXFSZ = 9, 24, 25  # Linux; the signal module (and json) would cost ~20 ms of imports
json = None

def is_int(t):
    s = t[1:] if t[:1] in "+-" else t
    return s.isdigit()

def num_eq(a, b):
    try:
        fa, fb = float(a), float(b)
    except (ValueError, OverflowError):
        return False
    if math.isnan(fa) or math.isnan(fb) or math.isinf(fa) or math.isinf(fb):
        return False
    return abs(fa - fb) <= 1e-6 * max(1.0, abs(fb))

def stdout_ok(got, exp):
    if got == exp:
        return True
    g, e = got.split(), exp.split()
    if g == e:
        return True
    if len(g) != len(e):
        return False
    for a, b in zip(g, e):
        if a != b and (is_int(a) and is_int(b) or not num_eq(a, b)):
            return False
    return True

def value_eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return num_eq(a, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(value_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(value_eq(a[k], b[k]) for k in a)
    return a == b

def call_ok(got, exp):
    return value_eq(got, exp) or (isinstance(exp, list) and len(exp) == 1 and value_eq(got, exp[0]))

def to_json(o):
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)

def child(compiled, fn_name, tmp, rfd):
    os.close(rfd)
    os.setpgid(0, 0)
    fd = os.open(tmp + "/in", os.O_RDONLY); os.dup2(fd, 0); os.close(fd)
    fd = os.open(tmp + "/out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600); os.dup2(fd, 1); os.close(fd)
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 2); os.close(fd)
    sys.stdin = sys.__stdin__ = open(0, "r", encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", closefd=False)
    code = 0
    try:
        ns = {"__name__": "__main__", "__builtins__": builtins}
        exec(compiled, ns)
        if fn_name is not None:
            fn = ns.get(fn_name)
            if not callable(fn):
                fn = getattr(ns["Solution"](), fn_name)
            with open(tmp + "/args", encoding="utf-8") as f:
                args = json.load(f)
            ret = fn(*args) if isinstance(args, list) else fn(args)
            text = json.dumps(ret, default=to_json)
            fd = os.open(tmp + "/ret", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, text.encode()); os.close(fd)
    except SystemExit as e:
        code = 0 if e.code is None or e.code == 0 else RE
    except MemoryError:
        code = MEM
    except OSError as e:
        code = OLIM if e.errno == errno.EFBIG else RE
    except BaseException:
        code = RE
    try:
        sys.stdout.flush()
    except MemoryError:
        code = code or MEM
    except OSError as e:
        code = code or (OLIM if e.errno == errno.EFBIG else RE)
    except BaseException:
        code = code or RE
    os._exit(code)

def wait_child(pid, deadline):
    try:
        pfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pfd = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if pfd is not None:
            if select.select([pfd], [], [], remaining)[0]:
                break
        else:
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
            time.sleep(min(0.002, remaining))
    if pfd is not None:
        os.close(pfd)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        return status
    os.kill(pid, SIGKILL)
    os.waitpid(pid, 0)
    return None

def cleanup(pid, killall):
    try:
        if killall:
            os.kill(-1, SIGKILL)
        else:
            os.killpg(pid, SIGKILL)
    except OSError:
        pass

def main():
    if not hasattr(builtins, "exit"):  # -S skips site, which defines exit() and quit()
        builtins.exit = builtins.quit = sys.exit
    global json
    req = marshal.loads(sys.stdin.buffer.read())
    start = time.monotonic()
    deadline = start + req["budget_s"]
    tmp = os.environ.get("TMPDIR") or "/tmp"
    killall = os.environ.get("BRORL_SANDBOX_PRIVATE_PIDS") == "1" and os.getpid() != 1
    rfd = os.dup(1)
    def emit(i, err):
        os.write(rfd, ("%d %s\n" % (i, err or "ok")).encode())
    fn_name = req["fn_name"]
    if fn_name is not None:
        import json
    try:
        compiled = compile(req["code"], "<solution>", "exec")
    except BaseException:
        emit(0, "runtime_error")
        emit(-1, "done")
        return
    for i, (inp, exp) in enumerate(zip(req["inputs"], req["outputs"])):
        for name in ("out", "ret"):
            try:
                os.unlink(tmp + "/" + name)
            except FileNotFoundError:
                pass
        with open(tmp + "/in", "w", encoding="utf-8") as f:
            f.write("" if fn_name is not None else inp)
        if fn_name is not None:
            with open(tmp + "/args", "w", encoding="utf-8") as f:
                f.write(inp)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            child(compiled, fn_name, tmp, rfd)
        status = wait_child(pid, deadline)
        cleanup(pid, killall)
        err = None
        if status is None:
            err = "timeout"
        elif os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            err = {SIGXFSZ: "output_limit", SIGXCPU: "timeout", SIGKILL: "timeout"}.get(sig, "runtime_error")
        else:
            code = os.WEXITSTATUS(status)
            err = {0: None, MEM: "memory", OLIM: "output_limit"}.get(code, "runtime_error")
        if err is None:
            try:
                if fn_name is None:
                    with open(tmp + "/out", "rb") as f:
                        got = f.read().decode("utf-8", "replace")
                    ok = stdout_ok(got, exp)
                else:
                    with open(tmp + "/ret", encoding="utf-8") as f:
                        got = json.load(f)
                    ok = call_ok(got, json.loads(exp))
            except (OSError, ValueError, RecursionError):
                ok = False
            err = None if ok else "wrong_answer"
        emit(i, err)
        if err == "timeout" or (err is not None and req["stop_on_fail"]):
            break
    emit(-1, "done")

main()
"""


def score_code(
    item: dict,
    response: str,
    *,
    reward: str = "binary",
    time_limit_s: float = 5.0,
    memory_mb: int | None = None,
    limits: Limits | None = None,
) -> Score:
    """Run the program of `response` on `item["tests"]` in the sandbox (module docstring); `memory_mb`: a cap per process."""
    if reward not in ("binary", "fraction"):
        raise ValueError(f"reward must be 'binary' or 'fraction', got {reward!r}")
    code = extract_code(response)
    if code is None:
        return failed(NO_CODE)
    tests = normalize_tests(item["tests"])
    n = len(tests["inputs"])
    payload = marshal.dumps(
        {
            "code": code,
            "inputs": tests["inputs"],
            "outputs": tests["outputs"],
            "fn_name": tests["fn_name"],
            "budget_s": float(time_limit_s),
            "stop_on_fail": reward == "binary",
        }
    )
    base = limits or Limits()
    memory = {"memory_bytes": int(memory_mb) << 20} if memory_mb else {}
    limits = dataclasses.replace(base, wall_s=time_limit_s + STARTUP_GRACE_S, cpu_s=int(time_limit_s) + 2, **memory)
    res = run_sandboxed(HARNESS, payload, limits)
    if res.timed_out:
        return failed("timeout")
    if res.output_limited:
        return failed("output_limit")
    results, done = [], False
    for line in res.stdout.decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[0].lstrip("-").isdigit():
            continue
        if parts == ["-1", "done"]:
            done = True
        elif parts[1] == "ok" or parts[1] in ERRORS:
            results.append({"i": int(parts[0]), "ok": parts[1] == "ok", "err": None if parts[1] == "ok" else parts[1]})
    errors = [r["err"] for r in results if not r["ok"]]
    if "timeout" in errors:
        return failed("timeout")
    if not done:
        log.debug("harness ended without a verdict (rc=%s): %s", res.returncode, res.stderr[-2000:])
        return failed(errors[0] if errors else "runtime_error")
    passed = sum(1 for r in results if r.get("ok"))
    if passed == n and not errors:
        return Score(1.0, True, None)
    first = errors[0] if errors else "runtime_error"
    if reward == "binary":
        return failed(first)
    return Score(passed / n, False, first)
