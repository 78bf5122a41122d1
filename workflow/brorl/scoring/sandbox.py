"""Run one untrusted Python program in a sandbox, offline, on Linux.

`run_sandboxed(code, stdin, limits)` runs `python -I -S -c code` with `stdin` on its standard input and returns a
`SandboxResult` (captured stdout/stderr, each capped; exit status; whether the wall-clock limit or the output cap
was hit; the isolation actually used). `code` is meant to be a small trusted harness; the untrusted program travels
inside `stdin` (see brorl.scoring.code), so the size of `code` is limited to what fits in one argv string.

Isolation, strongest available first (chosen once per process, see `isolation_mode()`):

* ``"bwrap"``: bubblewrap (Debian package `bubblewrap`), with
  ``--unshare-all`` (new user, network, pid, ipc, uts and cgroup namespaces: no network at all, only a loopback
  that is down), ``--die-with-parent``, ``--new-session`` (no TIOCSTI into our terminal), ``--clearenv`` (none of
  the caller's environment variables, i.e. no secrets), ``--cap-drop ALL``, a read-only bind of ``/usr`` only (with
  the merged-usr symlinks ``/bin``, ``/lib``, ``/lib64``; ``/etc``, ``/root``, ``/home``, ``/work`` and the repo are
  not mounted at all), a private size-capped tmpfs as ``/tmp`` (also the working directory), ``--proc /proc`` (of
  the new pid namespace) and ``--dev /dev`` (a minimal /dev). The interpreter is the system one in /usr
  (`Limits.python`, default ``/usr/bin/python3``), not a venv shim (a venv's or pyenv's interpreter lives outside
  the mounted tree, and a shim is about 3x slower to start).
* ``"rlimits+netns"``: no bwrap (or it cannot create namespaces): a plain subprocess in a private temporary
  directory with a cleared environment and a new network namespace (unshare(2)), plus everything below.
* ``"rlimits"``: only the process limits below. A warning is logged once when isolation is weaker than bwrap.

In every mode, in a pre-exec hook of the child: a new session (so the whole process group can be killed), the
rlimits RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE and RLIMIT_CORE=0, and, when we run as
root, a switch to an unprivileged user id of its own (RLIMIT_NPROC is not enforced for root, so without this a
fork bomb would be unbounded; a private uid also means the program cannot read root-only files even in the
fallback modes). From outside: a wall-clock limit (the process group is SIGKILLed when it is exceeded; under bwrap
that kills the namespace's init, which takes every process of the pid namespace with it) and an output cap
(at most `Limits.max_output_bytes` are read from stdout; more kills the sandbox and sets `output_limited`).

The harness may learn through the environment variable ``BRORL_SANDBOX_PRIVATE_PIDS=1`` that it runs in a pid
namespace of its own, where ``kill(-1, SIGKILL)`` reaches only the sandbox's own processes.

Limitation: this protects the host from the program; it does not make the verdict of a harness that shares its
sandbox with a deliberately adversarial program tamper-proof (the program could, for example, signal or ptrace
the harness, which runs as the same user).
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import os
import resource
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO

from .sandbox_kill import kill_group, kill_uid

log = logging.getLogger(__name__)

BWRAP = "bwrap"
BASE_UID = 200_000  # unprivileged user ids handed out to sandboxes when we run as root: BASE_UID + 0..99_999
MAX_CODE_BYTES = 120_000  # an argv string may be at most 128 KiB (MAX_ARG_STRLEN)
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed run."""

    wall_s: float = 6.0  # wall-clock limit, enforced from outside
    cpu_s: int | None = None  # RLIMIT_CPU per process; default: ceil(wall_s) + 1
    memory_bytes: int = 2 << 30  # RLIMIT_AS per process
    nproc: int = 32  # RLIMIT_NPROC: processes of the sandbox's user
    fsize_bytes: int = 64 << 20  # RLIMIT_FSIZE: largest file a process may write (e.g. a test's stdout file)
    nofile: int = 64  # RLIMIT_NOFILE
    tmpfs_bytes: int = 256 << 20  # size of the private /tmp (bwrap only)
    max_output_bytes: int = 1 << 20  # stdout read from the sandbox; more kills it
    max_stderr_bytes: int = 64 << 10  # stderr kept (the rest is read and dropped)
    python: str = "/usr/bin/python3"  # the interpreter inside the sandbox: a real binary under /usr


@dataclass(frozen=True)
class SandboxResult:
    stdout: bytes
    stderr: bytes
    returncode: int | None  # None when we killed it; negative: killed by that signal
    timed_out: bool
    output_limited: bool
    wall_s: float
    isolation: str  # "bwrap", "rlimits+netns" or "rlimits"


_uid_counter = itertools.count()
_mode_lock = threading.Lock()
_mode: str | None = None
_warned = False


def _next_uid() -> int:
    """A user id for one sandbox: distinct between concurrent sandboxes of one process, and (by pid) most likely
    between processes."""
    return BASE_UID + ((os.getpid() % 1000) * 100 + next(_uid_counter) % 100)


def _libc_unshare(flags: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(ctypes.c_int(flags)) == 0
    except Exception:  # noqa: BLE001 - any failure means "not available"
        return False


def _python_real(python: str) -> str:
    return os.path.realpath(shutil.which(python) or python)


def _bwrap_args(limits: Limits) -> list[str]:
    args = [
        BWRAP,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    if os.path.exists("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    args += [
        "--size",
        str(limits.tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--chdir",
        "/tmp",
        "--setenv",
        "PATH",
        "/usr/local/bin:/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "BRORL_SANDBOX_PRIVATE_PIDS",
        "1",
        "--",
    ]
    return args


def _preexec(limits: Limits, uid: int | None, netns: bool):
    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.wall_s) + 2
    own_procs = 0
    if uid is None:
        # RLIMIT_NPROC counts every process of the user: add the caller's own when we cannot switch user.
        own_procs = sum(1 for p in os.listdir("/proc") if p.isdigit() and _owned(p))

    def hook() -> None:
        if netns:
            if not _libc_unshare(CLONE_NEWNET) and not _libc_unshare(CLONE_NEWUSER | CLONE_NEWNET):
                os.write(2, b"sandbox: no network namespace\n")
        for res, value in (
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_NPROC, limits.nproc + own_procs),
            (resource.RLIMIT_FSIZE, limits.fsize_bytes),
            (resource.RLIMIT_NOFILE, limits.nofile),
            (resource.RLIMIT_CORE, 0),
        ):
            resource.setrlimit(res, (value, value))
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)

    return hook


def _owned(pid: str) -> bool:
    try:
        return os.stat("/proc/" + pid).st_uid == os.getuid()
    except OSError:
        return False


def _probe_bwrap(limits: Limits) -> bool:
    if shutil.which(BWRAP) is None:
        return False
    uid = _next_uid() if os.getuid() == 0 else None
    try:
        proc = subprocess.run(
            _bwrap_args(limits) + [_python_real(limits.python), "-I", "-S", "-c", "print(1)"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            preexec_fn=_preexec(limits, uid, netns=False),
            start_new_session=True,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout.strip() == b"1"


def _probe_netns() -> bool:
    try:
        proc = subprocess.run(
            ["true"], preexec_fn=_preexec(Limits(), None, netns=True), capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and b"no network namespace" not in proc.stderr


def isolation_mode(limits: Limits | None = None) -> str:
    """The strongest isolation that works here ("bwrap", "rlimits+netns", "rlimits"); probed once, then cached.
    The environment variable BRORL_SANDBOX=rlimits (or rlimits+netns) forces a weaker mode (for benchmarks)."""
    global _mode, _warned
    forced = os.environ.get("BRORL_SANDBOX")
    if forced in ("bwrap", "rlimits+netns", "rlimits"):
        return forced
    with _mode_lock:
        if _mode is None:
            if _probe_bwrap(limits or Limits()):
                _mode = "bwrap"
            else:
                _mode = "rlimits+netns" if _probe_netns() else "rlimits"
                if not _warned:
                    _warned = True
                    log.warning(
                        "bubblewrap is unavailable or cannot create namespaces: running untrusted code with %s only "
                        "(no filesystem isolation)",
                        _mode,
                    )
        return _mode


def isolation_problem(mode: str, allowed: bool, setting: str) -> str | None:
    """Why model-written programs must not run here, or None: without bubblewrap's namespaces the verifier falls back
    to resource limits and the programs run as the user, beside the checkpoints and results. `setting` is the config
    key that accepts the risk (training's or evaluation's)."""
    if mode == "bwrap" or allowed:
        return None
    return (
        f"the code verifier's sandbox runs with {mode!r} only on this node (bubblewrap is missing or cannot create "
        "user namespaces): model-written programs would run without filesystem isolation next to the checkpoints. "
        f"Install bubblewrap with unprivileged user namespaces on the nodes, or accept the risk with {setting}: true"
    )


def run_sandboxed(
    code: str, stdin: bytes = b"", limits: Limits = Limits(), *, isolation: str | None = None
) -> SandboxResult:
    """Run `python -I -S -c code` in the sandbox with `stdin` on its standard input; see the module docstring."""
    if len(code.encode()) > MAX_CODE_BYTES:
        raise ValueError(
            f"code too long for an argv string ({len(code.encode())} bytes > {MAX_CODE_BYTES}); "
            "pass the payload through stdin"
        )
    mode = isolation or isolation_mode(limits)
    uid = _next_uid() if os.getuid() == 0 else None
    python = _python_real(limits.python)
    argv_tail = [python, "-I", "-S", "-B", "-c", code]
    workdir = None
    if mode == "bwrap":
        argv = _bwrap_args(limits) + argv_tail
        env = {}
        cwd = "/"
        netns = False
    else:
        workdir = tempfile.mkdtemp(prefix="brorl-sbx-")
        if uid is not None:
            os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
        argv = argv_tail
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"}
        cwd = workdir
        netns = mode == "rlimits+netns"
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            preexec_fn=_preexec(limits, uid, netns),
            start_new_session=True,
            close_fds=True,
        )
        try:
            out, err, timed_out, output_limited = _communicate(proc, stdin, limits, start)
        finally:
            kill_group(proc)
            proc.wait()
        wall = time.monotonic() - start
        rc = None if (timed_out or output_limited) else proc.returncode
        return SandboxResult(out, err, rc, timed_out, output_limited, wall, mode)
    finally:
        if mode != "bwrap" and uid is not None:
            kill_uid(uid)  # processes that left the process group (setsid) outside a pid namespace
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def _communicate(proc: subprocess.Popen, data: bytes, limits: Limits, start: float):
    """Feed stdin, read stdout (capped) and stderr (kept up to a cap) until EOF, the wall limit or the output cap."""
    sel = selectors.DefaultSelector()
    out = bytearray()
    err = bytearray()
    view = memoryview(data)
    pos = 0
    for f in (proc.stdin, proc.stdout, proc.stderr):
        os.set_blocking(f.fileno(), False)
    if data:
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    open_readers = 2
    timed_out = output_limited = False
    try:
        while open_readers:
            remaining = limits.wall_s - (time.monotonic() - start)
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in sel.select(remaining):
                f = key.fileobj
                if f is proc.stdin:
                    pos = _feed(sel, f, view, pos)
                    continue
                try:
                    chunk = os.read(f.fileno(), 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(f)
                    open_readers -= 1
                    continue
                if f is proc.stdout:
                    out += chunk
                    if len(out) > limits.max_output_bytes:
                        del out[limits.max_output_bytes :]
                        output_limited = True
                        return bytes(out), bytes(err), timed_out, output_limited
                elif len(err) < limits.max_stderr_bytes:
                    err += chunk[: limits.max_stderr_bytes - len(err)]
        if not timed_out:
            # Both pipes closed: wait for the exit status, within the wall limit.
            try:
                proc.wait(max(0.0, limits.wall_s - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        sel.close()
        if not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
    return bytes(out), bytes(err), timed_out, output_limited


def _feed(sel: selectors.BaseSelector, f: IO[bytes], view: memoryview, pos: int) -> int:
    """The stdin position after one non-blocking write from ``pos``; ``f`` is closed once all is written (or broke)."""
    try:
        pos += os.write(f.fileno(), view[pos : pos + 65536])
    except BrokenPipeError:
        pos = len(view)
    except BlockingIOError:
        return pos
    if pos >= len(view):
        sel.unregister(f)
        f.close()
    return pos


def sandbox_python_problem(python: str, minimum: tuple[int, int] = (3, 8)) -> str | None:
    """Why the code verifier's interpreter (Limits.python, the node's system Python) cannot
    judge modern solutions, or None: an old system Python would score every such program 0 without a trace."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        )
        version = tuple(int(x) for x in out.stdout.split())
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        return f"{python} does not run ({error})"
    if version < minimum:
        return f"{python} is Python {'.'.join(map(str, version))}, older than {'.'.join(map(str, minimum))}"
    return None
