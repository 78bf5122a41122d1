"""Does CUDA IPC of a cloned tensor work between two sibling processes (`python -m brorl.training.openrlhf.ipc_probe`)?

OpenRLHF's colocated weight sync clones each parameter in the trainer, passes it through
torch.multiprocessing.reductions.reduce_tensor and pickles the handle to the vLLM engine, a Ray actor that is the
trainer's sibling under the raylet, not its ancestor. With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torch
shares such memory as POSIX file descriptors that the importer takes with pidfd_getfd on the exporter's pid; Linux
Yama ptrace_scope=1 refuses that unless the importer is an ancestor of the exporter or holds CAP_SYS_PTRACE
("pidfd_getfd: Operation not permitted", pytorch/pytorch#165685). Legacy segments (cudaIpcGetMemHandle) need no
ptrace permission; so does a clone made while expandable segments are switched off for the sync.

This probe reproduces that layout: the launcher starts an exporter and an importer as sibling processes and relays the
pickled handle between them over their stdin/stdout. Options:
  --alloc-conf STR  PYTORCH_CUDA_ALLOC_CONF of both children ("" = unset)
  --toggle          the exporter switches expandable segments off around the clone, then restores the setting
  --user UID        (root only) both children drop to this uid and gid, the unprivileged case
  --device cuda|cpu cpu: the same layout with a CPU tensor and the file_system sharing strategy (the tests)
  --timeout S       seconds per child step (default 60); --out FILE writes the JSON
  --matrix          expandable segments off / on / on with the toggle, as the current user and (root) as 65534
A single case exits 1 when it fails; the matrix is a report and exits 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pickle
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import torch

MARK = "@@ipc_probe "  # prefix of the children's protocol lines; anything else on stdout is ignored
NUMEL = 1 << 20  # a 4 MiB float32 "weight"
NOBODY = 65534
CAP_SYS_PTRACE = 19
OFF, ON = "expandable_segments:False", "expandable_segments:True"
MATRIX = [(OFF, False), (ON, False), (ON, True)]


def parse_ppid(stat: str) -> int:
    """The parent pid in a /proc/<pid>/stat line (the command name may hold spaces and parentheses)."""
    return int(stat[stat.rindex(")") + 1 :].split()[1])


def is_ancestor(chain: list[int], pid: int) -> bool:
    """Whether pid is a proper ancestor of the process whose chain ([itself, parent, ..., 1]) is given."""
    return pid in chain[1:]


def expandable_in(alloc_conf: str) -> bool:
    """Whether torch allocator settings ("key:value,...", PYTORCH_CUDA_ALLOC_CONF's form) turn expandable segments on."""
    options = dict(item.split(":", 1) for item in alloc_conf.replace(" ", "").split(",") if ":" in item)
    return options.get("expandable_segments", "False").lower() == "true"


def expandable_at_export(alloc_conf: str, toggle: bool) -> bool:
    """Whether the clone is made in an expandable segment: the setting is on and not switched off around the clone."""
    return expandable_in(alloc_conf) and not toggle


def in_expandable_segment(segments: list[dict], ptr: int) -> bool | None:
    """Whether ptr lies in an expandable segment of torch.cuda.memory_snapshot()'s segments (None: in none)."""
    for seg in segments:
        if seg["address"] <= ptr < seg["address"] + seg["total_size"]:
            return bool(seg.get("is_expandable"))
    return None


def is_ptrace_refusal(text: str | None) -> bool:
    """Whether a failure is the kernel refusing pidfd_getfd (Yama ptrace scope, no CAP_SYS_PTRACE)."""
    text = text or ""
    return "pidfd_getfd" in text or "Operation not permitted" in text or "EPERM" in text


def case_label(case: dict) -> str:
    """One case's settings in a few words."""
    user = "current" if case["user"] is None else str(case["user"])
    return f"{case['alloc_conf'] or 'unset'} toggle={'yes' if case['toggle'] else 'no'} user={user}"


def verdict(cases: list[dict]) -> str:
    """One line summarising the cases: all pass, or which fail and why, and which settings work instead."""
    failed = [c for c in cases if not c["ok"]]
    if not failed:
        return f"ok: all {len(cases)} cases rebuilt the tensor in a sibling process"
    refused = [c for c in failed if is_ptrace_refusal(f"{c['reason']}\n{c.get('detail', '')}")]
    parts = [f"FAIL: {len(failed)} of {len(cases)} cases"]
    if refused:
        parts.append(
            "pidfd_getfd refused for " + ", ".join(map(case_label, refused)) + ": expandable segments share memory as "
            "file descriptors that a non-ancestor importer may only take with ptrace permission (Yama ptrace_scope 1 "
            "without CAP_SYS_PTRACE, pytorch#165685)"
        )
        passing = [case_label(c) for c in cases if c["ok"]]
        parts.append("passing: " + (", ".join(passing) if passing else "none"))
    parts += [f"{case_label(c)}: {c['reason']}" for c in failed if c not in refused]
    return "; ".join(parts)


def ancestor_chain(pid: int) -> list[int]:
    """[pid, its parent, ..., 1] from /proc (stops at 0: a parent outside this pid namespace)."""
    chain = [pid]
    while chain[-1] > 1 and len(chain) < 256:
        ppid = parse_ppid(Path(f"/proc/{chain[-1]}/stat").read_text())
        if ppid <= 0:
            break
        chain.append(ppid)
    return chain


def identity() -> dict:
    """This process: pid, ancestors, euid and whether it may ptrace anyone (CAP_SYS_PTRACE)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    cap = bool(int(status["CapEff"], 16) >> CAP_SYS_PTRACE & 1)
    return {"pid": os.getpid(), "chain": ancestor_chain(os.getpid()), "euid": os.geteuid(), "cap_sys_ptrace": cap}


def _send(msg: dict) -> None:
    print(MARK + json.dumps(msg), flush=True)


def _error(exc: BaseException) -> dict:
    text = str(exc).strip()
    return {"error": f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}", "detail": text[:2000]}


def set_expandable(on: bool) -> None:
    with warnings.catch_warnings():  # deprecated in newer torch in favour of an accelerator-wide call; same effect
        warnings.simplefilter("ignore")
        torch.cuda.memory._set_allocator_settings(f"expandable_segments:{on}")


def _clone_expandable(clone: torch.Tensor) -> bool | None:
    """Whether the clone landed in an expandable segment (the toggle worked when not); a diagnostic only."""
    try:
        return in_expandable_segment(torch.cuda.memory_snapshot(), clone.data_ptr())
    except Exception:
        return None


def exporter(device: str, toggle: bool) -> None:
    """The trainer's side: clone a weight, reduce it to a handle, send it, keep the clone alive until told to stop."""
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing.reductions import reduce_tensor

    msg = identity()
    was_on = expandable_at_export(os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), False)
    try:
        if device == "cpu":
            torch.multiprocessing.set_sharing_strategy("file_system")  # a named shm file: unrelated processes open it
        weight = torch.arange(NUMEL, dtype=torch.float32, device=device)
        if toggle and device == "cuda":
            set_expandable(False)  # new allocations (the clone) go to a legacy cudaMalloc segment
        clone = weight.clone()  # OpenRLHF sends a clone of each parameter
        if device == "cuda":
            torch.cuda.synchronize()  # the clone is written before another process can read it
            msg["device_name"] = torch.cuda.get_device_name()
            msg["clone_expandable"] = _clone_expandable(clone)
        msg["handle"] = base64.b64encode(ForkingPickler.dumps(reduce_tensor(clone))).decode()
    except Exception as exc:
        msg.update(_error(exc))
    _send(msg)
    sys.stdin.readline()  # the importer has answered (or the launcher is gone): only now may the clone go
    msg = {"restored": False}
    try:
        clone = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.ipc_collect()
            if toggle:
                set_expandable(was_on)
                msg["restored"] = True
    except Exception as exc:
        msg.update(_error(exc))
    _send(msg)


def importer(device: str) -> None:
    """The vLLM engine's side: rebuild the tensor from the handle and compare it with the weight's known contents."""
    import torch.multiprocessing  # noqa: F401  registers the storage rebuilders that the CPU handle names

    msg = identity() | {"ok": False, "error": None, "rebuild_ms": None}
    try:
        if device == "cuda":
            torch.zeros(1, device="cuda")  # the CUDA context exists before the clock starts
            torch.cuda.synchronize()
        line = sys.stdin.readline().strip()
        if not line:
            raise RuntimeError("no handle from the exporter")
        start = time.perf_counter()
        rebuild, args = pickle.loads(base64.b64decode(line))
        tensor = rebuild(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        msg["rebuild_ms"] = (time.perf_counter() - start) * 1000
        msg["ok"] = torch.equal(tensor, torch.arange(NUMEL, dtype=torch.float32, device=tensor.device))
        if not msg["ok"]:
            msg["error"] = "the rebuilt tensor differs from the exporter's weight"
        del tensor
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:
        msg.update(_error(exc))
    _send(msg)


class ProbeError(Exception):
    """A child gave no answer in time, or exited without one."""


def _messages(proc: subprocess.Popen) -> queue.Queue:
    """A queue of the child's protocol messages, None when its stdout closes."""
    box: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            if line.startswith(MARK):
                box.put(json.loads(line[len(MARK) :]))
        box.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return box


def _receive(box: queue.Queue, timeout: float, who: str, err) -> dict:
    try:
        msg = box.get(timeout=timeout)
    except queue.Empty:
        raise ProbeError(f"{who}: no answer within {timeout:.0f} s") from None
    if msg is None:
        err.seek(0)
        tail = [line for line in err.read().decode(errors="replace").splitlines() if line.strip()][-1:]
        raise ProbeError(f"{who} exited without an answer: {tail[0] if tail else 'no stderr'}")
    return msg


def _child_env(work: Path, alloc_conf: str, user: int | None) -> tuple[dict, dict]:
    """(environment, Popen's uid-drop arguments) of a case's children: only the case's allocator setting applies;
    with `user`, they run as that uid with a home of their own in `work`."""
    # torch >= 2.9 also reads PYTORCH_ALLOC_CONF: drop both so that only the case's setting applies
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    env |= {"PYTORCH_CUDA_ALLOC_CONF": alloc_conf} if alloc_conf else {}
    drop: dict = {}
    if user is not None:
        (work / "home").mkdir()
        os.chown(work / "home", user, user)
        env["HOME"] = str(work / "home")
        drop = {"user": user, "group": user, "extra_groups": []}  # setgroups, setgid, setuid before exec
    return env, drop


def run_case(alloc_conf: str, toggle: bool, user: int | None, device: str, timeout: float) -> dict:
    """One exporter and one importer, siblings under this process; the case's result with both identities."""
    case = {"alloc_conf": alloc_conf, "toggle": toggle, "user": user, "device": device, "launcher_pid": os.getpid()}
    case |= {"ok": False, "reason": None, "rebuild_ms": None, "exporter": {}, "importer": {}}
    # the children run a copy of this file from a fresh world-readable folder: a dropped uid can read it, and their
    # sys.path[0] holds nothing else
    work = Path(tempfile.mkdtemp(prefix="ipc_probe_"))
    work.chmod(0o755)
    script = work / "ipc_probe.py"
    shutil.copyfile(__file__, script)
    script.chmod(0o644)
    env, drop = _child_env(work, alloc_conf, user)
    procs, errs, answered = [], [], False
    try:
        for role in ("exporter", "importer"):
            errs.append(tempfile.TemporaryFile())
            cmd = [sys.executable, str(script), "--role", role, "--device", device] + (["--toggle"] if toggle else [])
            pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": errs[-1]}
            procs.append(subprocess.Popen(cmd, **pipes, text=True, env=env, cwd=work, **drop))
        (exp, imp), (exp_box, imp_box) = procs, [_messages(p) for p in procs]
        case["exporter"] = _receive(exp_box, timeout, "exporter", errs[0])
        if case["exporter"].get("error"):
            raise ProbeError(f"exporter: {case['exporter']['error']}")
        imp.stdin.write(case["exporter"].pop("handle") + "\n")
        imp.stdin.flush()
        case["importer"] = got = _receive(imp_box, timeout, "importer", errs[1])
        case |= {"ok": bool(got["ok"]), "reason": got["error"], "detail": got.get("detail", "")}
        case["rebuild_ms"] = got["rebuild_ms"]
        exp.stdin.write("done\n")
        exp.stdin.flush()
        case["exporter"].update(_receive(exp_box, timeout, "exporter", errs[0]))
        if case["exporter"].get("error"):  # the clone's release or the setting's restore failed
            raise ProbeError(f"exporter after the import: {case['exporter']['error']}")
        answered = True
    except (ProbeError, OSError) as exc:  # OSError: a child could not start (a dropped uid cannot run Python)
        case |= {"ok": False, "reason": case["reason"] or f"{type(exc).__name__}: {exc}"}
    finally:
        for proc in procs:  # both answered: let them exit (the exporter releases its clone); else stop them now
            try:
                proc.stdin.close()
                proc.wait(timeout=10 if answered else 0.1)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for err in errs:
            err.close()
        shutil.rmtree(work, ignore_errors=True)
    case["exporter_pid"], case["importer_pid"] = [p.pid for p in procs] + [None] * (2 - len(procs))
    exp_chain, imp_chain = case["exporter"].get("chain"), case["importer"].get("chain")
    if exp_chain and imp_chain:
        case["importer_is_ancestor_of_exporter"] = is_ancestor(exp_chain, imp_chain[0])
        case["exporter_is_ancestor_of_importer"] = is_ancestor(imp_chain, exp_chain[0])
    return case


def header() -> dict:
    """The facts the result depends on: kernel, Yama scope, torch and its CUDA, who runs it."""
    yama = Path("/proc/sys/kernel/yama/ptrace_scope")
    scope = yama.read_text().strip() if yama.exists() else "absent"
    head = {"kernel": os.uname().release, "ptrace_scope": scope, "torch": torch.__version__, "cuda": torch.version.cuda}
    return head | {k: v for k, v in identity().items() if k in ("euid", "cap_sys_ptrace")}


def render(head: dict, cases: list[dict]) -> str:
    """The report: the header, one line per case, the verdict."""
    lines = ["  ".join(f"{k}={v}" for k, v in head.items())]
    for c in cases:
        result = "ok" if c["ok"] else f"FAIL {c['reason']}"
        ms = "-" if c["rebuild_ms"] is None else f"{c['rebuild_ms']:.1f} ms"
        lines.append(f"{case_label(c):<50}  {ms:>10}  {result}")
    return "\n".join([*lines, verdict(cases)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m brorl.training.openrlhf.ipc_probe", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--role", choices=["exporter", "importer"], help=argparse.SUPPRESS)
    parser.add_argument("--alloc-conf", default=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    parser.add_argument("--toggle", action="store_true")
    parser.add_argument("--user", type=int, default=None)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--matrix", action="store_true")
    a = parser.parse_args(argv)
    if a.role == "exporter":
        exporter(a.device, a.toggle)
        return 0
    if a.role == "importer":
        importer(a.device)
        return 0
    if a.user is not None and os.geteuid() != 0:
        parser.error("--user needs root (the children drop to it)")
    users = [None] + ([NOBODY] if os.geteuid() == 0 else [])
    plan = [(conf, t, u) for conf, t in MATRIX for u in users] if a.matrix else [(a.alloc_conf, a.toggle, a.user)]
    head, cases = header(), []
    for conf, toggle, user in plan:
        cases.append(run_case(conf, toggle, user, a.device, a.timeout))
    print(render(head, cases))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"header": head, "cases": cases, "verdict": verdict(cases)}, indent=2) + "\n")
    return 0 if a.matrix or all(c["ok"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
