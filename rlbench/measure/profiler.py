"""Stack profiles of a running trial, taken from outside: py-spy on each of its Python processes.

With ``profile_hz > 0`` the sweep starts one ``py-spy record`` per Python process of the trial
(driver, env runners, learners, Ray's own Python agents, pooled workers; ``profile_roles`` can
narrow that) when the trial's
warm-up iterations are over, and stops them before the trial's last iteration, so the profiles
hold the steady state only (the same window the utilization figures use, less its last
iteration, which runs into the shutdown; with a single steady iteration the stop comes as that
iteration ends, at most one poll of the trial, 0.05 s, late). py-spy reads the stacks through
``process_vm_readv`` like a debugger and never runs code inside the process.

One py-spy per process, not ``--subprocesses`` on the trial's root, because:

- the window: ``--subprocesses`` follows children from whenever it starts, and the sweep must
  choose the window anyway; per process, the start and stop are the sweep's, for every process;
- the files: each process gets its own ``<role>-<pid>.speedscope.json`` under the role the
  utilization sampler already gave it, instead of one merged profile to split again by pid;
- failure stays local: a process py-spy cannot read (Ray's C++ ``gcs_server`` and ``raylet`` are
  not Python and are skipped; a worker that exits) costs its own profile only.

The price is one py-spy process per profiled process (each samples one target; their CPU is
measured per trial, ``cpu_s``, and adopted into the utilization sample as ``harness`` so that it
is never counted as the trial's). Where the machine has cores outside the trial's, py-spy runs
on those. ``--nonblocking`` keeps py-spy from pausing the target at every sample (the target
never stops; a stack read while it changes is occasionally wrong, which py-spy counts as an
error); ``profile_native`` needs the pause (py-spy 0.4.3: "Can't get native stack traces with the
--nonblocking option"), so with it py-spy stops each process briefly at every sample; ``--function`` aggregates by a
function's first line, so a function is one row of
``profiles.parquet``. Without ptrace permission py-spy cannot attach: the trial runs unprofiled
and its ``profile`` event says why. Costs: docs/MEASUREMENT.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rlbench.results.events import Event
from rlbench.results.events_file import IterationEvent, TrialEvent
from rlbench.results.files import append_line, write_atomic
from rlbench.results.layout import TrialFolder

#: Seconds py-spy gets to write its file after SIGINT before it is killed.
STOP_WAIT_S = 15.0
#: Seconds a py-spy that has not begun sampling when the window closes gets to attach or to fail
#: (it fails in about 0.4 s without permission; a SIGINT before that would hide why).
ATTACH_WAIT_S = 5.0
#: Events that mean the trial is leaving its training loop: profiling stops at once.
ENDING_EVENTS = frozenset({Event.SHUTDOWN, Event.ERROR, Event.END, Event.INTERRUPTED, Event.SKIPPED})

_SUMMARY = re.compile(rb"Samples: (\d+) Errors: (\d+)")
_SAMPLING = b"Sampling process"  # py-spy's banner once it has attached
_NO_PERMISSION = (b"Permission Denied", b"Operation not permitted", b"EPERM", b"permission denied")
_GONE = (b"No such process", b"No such file or directory", b"process exited", b"Failed to open process")
_PIN_AND_EXEC = (
    "import os,sys;os.sched_setaffinity(0,[int(c) for c in sys.argv[1].split(',')]);os.execv(sys.argv[2],sys.argv[2:])"
)


def find_pyspy() -> str | None:
    """The py-spy binary: the one installed beside this Python (its wheel's script), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("py-spy")


def is_python(pid: int) -> bool:
    """Whether ``pid`` runs a Python interpreter (py-spy reads nothing else): its executable's name."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith(("python", "pypy"))
    except OSError:
        return False


def steady_profile_over(
    plan_warmup: int, stop_iterations: int | None, stop_seconds: float | None, iterations: list[IterationEvent]
) -> bool:
    """Whether profiling should stop now: at least one steady iteration is in the profile and the
    next iteration is (or, for a time limit, is expected to be: trained time plus the mean steady
    iteration reaches it) the trial's last."""
    n = len(iterations)
    if n - plan_warmup < 1:
        return False
    if stop_iterations is not None and n >= stop_iterations - 1:
        return True
    if stop_seconds is not None:
        walls = [float(e.wall_s or 0.0) for e in iterations]
        steady = walls[plan_warmup:]
        if sum(walls) + sum(steady) / len(steady) >= stop_seconds:
            return True
    return False


@dataclass
class ProfiledProcess:
    """One process py-spy was asked to sample, and what came of it."""

    pid: int
    """The process."""
    role: str
    """Its role, as the utilization sampler classified it."""
    status: str = "running"
    """``ok``, ``not python`` (skipped), ``no permission`` (py-spy cannot attach), ``gone`` (it
    exited before py-spy attached), ``late`` (py-spy attached only after the window closed; its
    samples are not kept), ``failed`` (any other py-spy error; see ``error``)."""
    error: str | None = None
    """py-spy's last words when it failed."""
    samples: int | None = None
    """Stack samples py-spy wrote."""
    errors: int | None = None
    """Samples py-spy could not read (``--nonblocking`` reads a changing stack now and then)."""
    cpu_s: float | None = None
    """CPU time py-spy itself used (user + system)."""
    file: str | None = None
    """The profile's file name in ``profiles/``."""
    profiler_pid: int | None = None
    """py-spy's own pid (sampled as ``harness`` in utilization.parquet)."""


class TrialProfiler:
    """py-spy on every Python process of one trial, in its steady-state window.

    The sweep calls :meth:`poll` with the trial's events at every poll, :meth:`stop` when the
    trial is over, then :meth:`finish`, which writes the profiles into ``profiles/`` and appends
    a ``profile`` event to ``events.jsonl``. ``pyspy`` is the binary (a seam for tests; default:
    :func:`find_pyspy`).
    """

    def __init__(
        self,
        trial: TrialFolder,
        sampler,
        *,
        hz: int,
        native: bool,
        warmup_iterations: int,
        stop_iterations: int | None,
        stop_seconds: float | None,
        t0_epoch: float,
        roles: list[str] | None = None,
        cores: list[int] | None = None,
        pyspy: str | None = None,
    ):
        self.trial, self.sampler = trial, sampler
        self.hz, self.native = int(hz), bool(native)
        self.roles = set(roles) if roles is not None else None
        self.warmup, self.stop_iterations, self.stop_seconds = warmup_iterations, stop_iterations, stop_seconds
        self.t0_epoch = t0_epoch
        self.pyspy = pyspy if pyspy is not None else find_pyspy()
        usable = os.sched_getaffinity(0)
        self.spare_cores = sorted(usable - set(cores or [])) if cores and usable - set(cores) else []
        self.processes: list[ProfiledProcess] = []
        self.t_start_s: float | None = None
        self.t_stop_s: float | None = None
        self.note: str | None = None
        self._running: dict[int, tuple[subprocess.Popen, ProfiledProcess]] = {}
        self._late: set[int] = set()
        self._tmp: Path | None = None
        self._finished = False

    @property
    def enabled(self) -> bool:
        return self.hz > 0

    @property
    def started(self) -> bool:
        return self.t_start_s is not None

    def now_s(self) -> float:
        return time.time() - self.t0_epoch

    # -- the window ----------------------------------------------------------------------------

    def poll(self, events: list[TrialEvent]) -> None:
        """Start after the warm-up iterations, stop before the last iteration (or as the trial leaves
        its training loop)."""
        if not self.enabled or self.t_stop_s is not None:
            return
        names = {e.event for e in events}
        iterations = [e for e in events if isinstance(e, IterationEvent)]
        over = steady_profile_over(self.warmup, self.stop_iterations, self.stop_seconds, iterations)
        if not self.started:
            if not names & ENDING_EVENTS and Event.BUILD in names and len(iterations) >= self.warmup and not over:
                self.start()
            return
        if names & ENDING_EVENTS or over:
            self.stop()

    def start(self) -> None:
        """One py-spy per Python process the sampler knows in the trial (rlbench's own left out)."""
        self.t_start_s = self.now_s()
        if self.pyspy is None:
            self.note = "py-spy is not installed (pip install py-spy)"
            return
        self.trial.profiles_dir.mkdir(exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=".py-spy-", dir=self.trial.profiles_dir))
        for pid, role in sorted(self.sampler.processes().items()):
            if self.roles is not None and role not in self.roles:
                continue
            proc = ProfiledProcess(pid=pid, role=role)
            self.processes.append(proc)
            if not is_python(pid):
                proc.status = "not python"
                continue
            out = self._tmp / f"{pid}.json"
            # py-spy reads native stacks only from a stopped process: --native pauses the target at
            # every sample, --nonblocking (the default here) never does
            cmd = [self.pyspy, "record", "--format", "speedscope", "--rate", str(self.hz), "--pid", str(pid)]
            cmd += ["--function", "--output", str(out), "--native" if self.native else "--nonblocking"]
            if self.spare_cores:
                cmd = [sys.executable, "-I", "-S", "-c", _PIN_AND_EXEC, ",".join(map(str, self.spare_cores)), *cmd]
            with open(self._tmp / f"{pid}.log", "wb") as log:
                try:
                    popen = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        close_fds=True,
                    )
                except OSError as e:
                    proc.status, proc.error = "failed", f"cannot start py-spy: {e}"
                    continue
            self._running[pid] = (popen, proc)
            proc.profiler_pid = popen.pid
            self.sampler.adopt(popen.pid)

    def _sampling(self, pid: int) -> bool:
        """Whether py-spy has attached to ``pid`` (its banner is in its log)."""
        assert self._tmp is not None
        try:
            return _SAMPLING in (self._tmp / f"{pid}.log").read_bytes()
        except OSError:
            return False

    def stop(self) -> None:
        """Ask every py-spy that is sampling to write its file and exit (SIGINT, as Ctrl-C); one still
        attaching is left to :meth:`finish`, which reaps them all."""
        if not self.started or self.t_stop_s is not None:
            return
        self.t_stop_s = self.now_s()
        for pid, (popen, _proc) in self._running.items():
            if self._sampling(pid):
                _interrupt(popen)
            else:
                self._late.add(pid)

    def _settle_late(self, pid: int, popen: subprocess.Popen, proc: ProfiledProcess) -> None:
        """A py-spy that had not attached when the window closed: let it fail (and say why) or attach
        (its samples would lie outside the window: stopped, not kept)."""
        deadline = time.monotonic() + ATTACH_WAIT_S
        while popen.poll() is None and not self._sampling(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if popen.returncode is None:
            proc.status, proc.error = "late", "py-spy had not attached when the steady window closed"
            _interrupt(popen)

    # -- the results ---------------------------------------------------------------------------

    def _reap(self, popen: subprocess.Popen, deadline: float) -> float | None:
        """Wait for one py-spy (killing it at ``deadline``); its CPU time from the kernel's rusage."""
        while True:
            try:
                pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid:
                popen.returncode = os.waitstatus_to_exitcode(status)
                return usage.ru_utime + usage.ru_stime
            if time.monotonic() > deadline:
                popen.kill()
                deadline = float("inf")
            time.sleep(0.02)

    def _collect(self, popen: subprocess.Popen, proc: ProfiledProcess, deadline: float) -> None:
        proc.cpu_s = self._reap(popen, deadline)
        if proc.status == "late":
            return
        assert self._tmp is not None
        log = (self._tmp / f"{proc.pid}.log").read_bytes()
        out = self._tmp / f"{proc.pid}.json"
        counts = _SUMMARY.search(log)
        if counts:
            proc.samples, proc.errors = int(counts.group(1)), int(counts.group(2))
        if popen.returncode == 0 and out.is_file() and not out.is_symlink():
            target = self.trial.profile_file(proc.role, proc.pid)
            write_atomic(target, out.read_bytes())
            proc.status, proc.file = "ok", target.name
            return
        lines = [line.strip() for line in log.decode(errors="replace").splitlines() if line.strip()]
        proc.error = (lines[-1] if lines else f"py-spy exited with {popen.returncode}")[:300]
        if any(marker in log for marker in _NO_PERMISSION):
            proc.status = "no permission"
        elif any(marker in log for marker in _GONE):
            # py-spy's last line is then a frame of its own backtrace ("6: std::sys::thread::..."), seen
            # when a plain trial of 40 tiny iterations ended 20 ms into its window: say what happened
            proc.status, proc.error = "gone", "the process ended before py-spy attached"
        else:
            proc.status = "failed"

    def status(self) -> tuple[str, str | None]:
        """(``ok`` | ``partial`` | ``unavailable`` | ``not started``, a note saying why when not ok)."""
        if not self.started:
            return "not started", "the trial ended before its steady state"
        profiled = [p for p in self.processes if p.status != "not python"]
        ok = [p for p in profiled if p.status == "ok"]
        if self.note:
            return "unavailable", self.note
        if not ok:
            if any(p.status == "no permission" for p in profiled):
                return "unavailable", (
                    "py-spy cannot attach: no ptrace permission (run as root, or give the "
                    "sweep CAP_SYS_PTRACE; in a container: --cap-add SYS_PTRACE)"
                )
            first = next((p for p in profiled if p.error), None)
            return "unavailable", f"no process could be profiled: {first.error if first else 'none found'}"
        if len(ok) < len(profiled):
            failed = [p for p in profiled if p.status != "ok"]
            return "partial", "; ".join(f"{p.role} {p.pid}: {p.status}" for p in failed)[:500]
        return "ok", None

    def finish(self) -> dict[str, Any] | None:
        """Reap every py-spy, put the profiles in place, append the ``profile`` event; returns its
        fields (None when profiling is off)."""
        if not self.enabled or self._finished:
            return None
        self._finished = True
        self.stop()
        for pid in sorted(self._late):
            self._settle_late(pid, *self._running[pid])
        deadline = time.monotonic() + STOP_WAIT_S
        for popen, proc in self._running.values():
            self._collect(popen, proc, deadline)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
        status, note = self.status()
        cpu = [p.cpu_s for p in self.processes if p.cpu_s is not None]
        event = {
            "event": Event.PROFILE,
            "t_s": round(self.now_s(), 6),
            "status": status,
            "note": note,
            "hz": self.hz,
            "native": self.native,
            "roles": sorted(self.roles) if self.roles is not None else None,
            "t_start_s": self.t_start_s,
            "t_stop_s": self.t_stop_s,
            "cpu_s": sum(cpu) if cpu else None,
            "processes": [asdict(p) for p in self.processes],
        }
        append_line(self.trial.events_file, json.dumps(event).encode())
        return event


def _interrupt(popen: subprocess.Popen) -> None:
    with suppress(OSError):
        popen.send_signal(signal.SIGINT)
