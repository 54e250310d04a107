"""The on-disk layout of a result set: every file name in one place, and the folder objects.

Layout of ``--out DIR`` (schema in docs/SCHEMA.md)::

    manifest.json                        spec, software, machine, start/end
    env_ceilings.json                    the env stepping alone, per distinct setting
    trials/<trial_id>/plan.json          what the trial was to run
    trials/<trial_id>/events.jsonl       the trial's own log of phases and iterations (append-only)
    trials/<trial_id>/record.json        the sweep's verdict on the trial (status, reason, timings)
    trials/<trial_id>/utilization.parquet         the sweep's sampler's rows for the trial
    trials/<trial_id>/utilization_nodes.parquet   the cluster node samplers' rows (cluster mode)
    trials/<trial_id>/trial.log          the trial's stdout/stderr (Ray's chatter, tracebacks)
    trials/<trial_id>/profiles/          py-spy's stack samples per process (<role>-<pid>.speedscope.json,
                                         with profile_hz) and a flame graph per role (flame-<role>.svg)
    attempts/<trial_id>/<n>/             earlier attempts of trials a resume ran again
    trials.parquet, iterations.parquet, utilization.parquet, node_roles.parquet, summary.csv,
    runner_iterations.parquet, profiles.parquet
                                         derived from trials/ (rlbench.analysis.tables)
    plots/, report.html, report.md       figures and the report
    next.yaml                            the sweep a verdict asks for next (one knob around its value), if any
    autoconfig.json, rllib_config.py, best.yaml, autoconfig_state.json
                                         rlbench autoconfig's answer and its resumable state
    .rlbench.lock                        held by a running sweep

The per-trial files are the truth; everything at the top is derived and can be rebuilt. Standard
library only: the trial process and the tools that read a folder import it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rlbench.results.events import Event
from rlbench.results.files import fsync_dir

if TYPE_CHECKING:
    from rlbench.results.events_file import EventTail, TrialEvent

E = TypeVar("E", bound="TrialEvent")

MANIFEST_FILE = "manifest.json"
CEILINGS_FILE = "env_ceilings.json"
TRIALS_DIR = "trials"
#: Earlier attempts of re-run trials are moved to ``attempts/<trial_id>/<n>/`` (never in the tables).
ATTEMPTS_DIR = "attempts"
LOCK_FILE = ".rlbench.lock"
PLOTS_DIR = "plots"
TRIALS_TABLE = "trials.parquet"
ITERATIONS_TABLE = "iterations.parquet"
UTILIZATION_TABLE = "utilization.parquet"
NODE_ROLES_TABLE = "node_roles.parquet"
RUNNER_ITERATIONS_TABLE = "runner_iterations.parquet"
PROFILES_TABLE = "profiles.parquet"
SUMMARY_CSV = "summary.csv"
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
#: The sweep a learner verdict asks for next (rlbench.report.next_spec): one per results folder, or none.
NEXT_SPEC = "next.yaml"
COMPARE_CSV = "compare.csv"
COMPARE_JSON = "compare.json"
AUTOCONFIG_JSON = "autoconfig.json"
#: autoconfig's resumable state: the probes, each stage's arguments, request -> trial id.
AUTOCONFIG_STATE = "autoconfig_state.json"
#: ``rlbench history``: the trend per configuration and the step verdicts, its figure (in ``plots/``) and its
#: page, at the top of a history folder (:class:`HistoryFolder`) whose runs are sweep folders in ``runs/``;
#: ``rlbench bisect``: every probe and the answer (beside its probes' folders).
HISTORY_JSON = "history.json"
HISTORY_PNG = "history.png"
HISTORY_HTML = "history.html"
HISTORY_RUNS_DIR = "runs"
#: A history run's folder name: ``01-history``, ``02-confirm-2.44.1-2.45.0-c1``.
HISTORY_RUN_PATTERN = r"(\d{2,})-(history|confirm)(-[A-Za-z0-9.\-]+)?"
BISECT_JSON = "bisect.json"
#: ``rlbench servebench``'s folder: its runs and rows, and its report (figures in PLOTS_DIR).
SERVEBENCH_JSON = "servebench.json"
SERVEBENCH_HTML = "servebench.html"
SERVEBENCH_MD = "servebench.md"

PLAN_FILE = "plan.json"
EVENTS_FILE = "events.jsonl"
RECORD_FILE = "record.json"
LOG_FILE = "trial.log"
TRIAL_UTILIZATION_FILE = "utilization.parquet"
NODE_UTILIZATION_FILE = "utilization_nodes.parquet"
REPRODUCE_FILE = "reproduce.yaml"
#: Created by the sweep when a trial launched early may build: the previous trial's processes are gone.
GATE_FILE = "gate"
#: ``window-<k>`` (k from 0) and ``window-stop``: created by the sweep to start a warm trial's measured window k
#: (the first also its runtime's start, build and warm-up, unless ``window-launch`` started those before) or to end
#: it (planning/plan.py ``windows``).
WINDOW_GATE_PREFIX = "window-"
#: ``window-launch``: starts a warm trial's runtime, build and warm-up, after which it waits for ``window-0``: the
#: pool launches several trials together this way (run/warm.py), none of them beside a measured window.
LAUNCH_GATE = "launch"
PROFILES_DIR = "profiles"
#: ``profiles/<role>-<pid>`` + this: one process's stack samples (speedscope's JSON format).
PROFILE_SUFFIX = ".speedscope.json"
#: ``profiles/flame-<role>.svg``: the flame graph of all of a role's processes together.
FLAMEGRAPH_PREFIX = "flame-"

#: Columns of a utilization row, in order, before the ``trial_id`` the tables add (docs/SCHEMA.md;
#: types in rlbench.results.tables); ``kind`` is process, core, gpu or cpu_energy. Both samplers (the
#: sweep's and the cluster node samplers) make rows of this shape; ``node_id``/``node_ip`` are null
#: for the sweep's own sampler.
UTILIZATION_COLUMNS: tuple[str, ...] = (
    "t_s",
    "kind",
    "role",
    "pid",
    "core",
    "cpu_pct",
    "rss_bytes",
    "gpu_index",
    "gpu_util_pct",
    "gpu_mem_used_bytes",
    "gpu_power_w",
    "gpu_sm_clock_mhz",
    "gpu_energy_mj",
    "node_id",
    "node_ip",
    "cpu_package",
    "cpu_energy_uj",
)


class _File:
    """A file or folder of a folder object, by its name: ``plan = _File(PLAN_FILE)`` makes ``folder.plan`` the path
    ``folder.path / PLAN_FILE``."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, folder: Any, owner: type | None = None) -> Path:
        return folder.path / self.name


@dataclass(frozen=True)
class TrialFolder:
    """``trials/<trial_id>/``: one trial's own files, the truth its table rows are built from."""

    path: Path
    """The folder."""

    @property
    def trial_id(self) -> str:
        """The trial's id (the folder's name)."""
        return self.path.name

    plan = _File(PLAN_FILE)
    events_file = _File(EVENTS_FILE)
    record = _File(RECORD_FILE)
    log = _File(LOG_FILE)
    utilization = _File(TRIAL_UTILIZATION_FILE)
    node_utilization = _File(NODE_UTILIZATION_FILE)
    gate = _File(GATE_FILE)
    reproduce = _File(REPRODUCE_FILE)
    profiles_dir = _File(PROFILES_DIR)

    def window_gate(self, window: int | str) -> Path:
        """The gate that starts measured window ``window`` of a warm trial; ``"stop"``: ends it; :data:`LAUNCH_GATE`:
        starts it up to its first window."""
        return self.path / f"{WINDOW_GATE_PREFIX}{window}"

    def profile_file(self, role: str, pid: int) -> Path:
        """One process's stack samples: ``profiles/<role>-<pid>.speedscope.json``."""
        return self.profiles_dir / f"{role}-{int(pid)}{PROFILE_SUFFIX}"

    def flamegraph(self, role: str) -> Path:
        """The flame graph of a role's processes together: ``profiles/flame-<role>.svg``."""
        return self.profiles_dir / f"{FLAMEGRAPH_PREFIX}{role}.svg"

    def profile_files(self) -> list[tuple[str, int, Path]]:
        """(role, pid, path) of every profile in ``profiles/``, by role then pid (links are not followed)."""
        if not self.profiles_dir.is_dir() or self.profiles_dir.is_symlink():
            return []
        found = []
        for path in self.profiles_dir.iterdir():
            stem = path.name[: -len(PROFILE_SUFFIX)] if path.name.endswith(PROFILE_SUFFIX) else ""
            role, _, pid = stem.rpartition("-")
            if role and pid.isdigit() and not path.is_symlink() and path.is_file():
                found.append((role, int(pid), path))
        return sorted(found, key=lambda f: (f[0], f[1]))

    def exists(self) -> bool:
        """Whether the folder exists."""
        return self.path.exists()

    # The events are read typed (pydantic): imported here, so the trial process importing this module needs none.
    def events(self) -> list[TrialEvent]:
        """The trial's events so far, typed (a torn last line dropped)."""
        from rlbench.results.events_file import read_events

        return read_events(self.events_file)

    def event(self, kind: type[E]) -> E | None:
        """The first event of model ``kind`` (``rlbench.results.events_file``), or None."""
        return next((e for e in self.events() if isinstance(e, kind)), None)

    def tail(self) -> EventTail:
        """The events file, read as it grows."""
        from rlbench.results.events_file import EventTail

        return EventTail(self.events_file)

    def iterations_done(self) -> int:
        """Iterations the trial recorded."""
        return sum(e.event == Event.ITERATION for e in self.events())

    def session_dir(self) -> str | None:
        """The trial's private Ray session folder (None on a cluster, or before Ray started)."""
        from rlbench.results.events_file import RayInitEvent

        ray_init = self.event(RayInitEvent)
        return ray_init.session_dir if ray_init is not None else None

    def log_tail(self, lines: int = 5) -> str:
        """The last non-empty lines of the trial's log, joined by `` | ``."""
        if not self.log.exists():
            return ""
        text = [line for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        return " | ".join(text[-lines:])


@dataclass(frozen=True)
class ResultsFolder:
    """A result set's folder: where each of its files lives, and moving trials between attempts."""

    path: Path
    """The folder (``--out``)."""

    manifest = _File(MANIFEST_FILE)
    ceilings = _File(CEILINGS_FILE)
    trials_dir = _File(TRIALS_DIR)
    attempts_dir = _File(ATTEMPTS_DIR)
    plots = _File(PLOTS_DIR)
    autoconfig = _File(AUTOCONFIG_JSON)
    next_spec = _File(NEXT_SPEC)
    autoconfig_state = _File(AUTOCONFIG_STATE)

    def table(self, name: str) -> Path:
        """A derived table's file, e.g. ``table(TRIALS_TABLE)``."""
        return self.path / name

    def trial(self, trial_id: str) -> TrialFolder:
        """One trial's folder (which may not exist yet)."""
        return TrialFolder(self.trials_dir / trial_id)

    def trials(self) -> list[TrialFolder]:
        """Every trial folder with a plan, in trial-id order."""
        if not self.trials_dir.exists():
            return []
        return [TrialFolder(p) for p in sorted(self.trials_dir.iterdir()) if p.is_dir() and (p / PLAN_FILE).exists()]

    def holds_sweep(self) -> bool:
        """Whether the folder already holds (part of) a sweep's results."""
        return self.manifest.exists() or self.trials_dir.is_dir()

    def is_result_set(self) -> bool:
        """Whether the folder looks like a result set the analysis commands can read."""
        return self.table(TRIALS_TABLE).exists() or self.trials_dir.is_dir()

    def unsafe_entries(self, limit: int = 1_000_000) -> list[Path]:
        """Everything under the folder that is not a plain file or folder (symbolic links, FIFOs,
        sockets, devices), links never followed; also the folder itself when it is a link.

        Stops after ``limit`` entries (the rest unchecked): a result set has a few per trial.
        """
        if self.path.is_symlink():
            return [self.path]
        found, seen = [], 0
        for root, dirs, files in os.walk(self.path):  # os.walk never descends into a linked folder
            for name in dirs + files:
                seen += 1
                entry = Path(root) / name
                try:
                    mode = entry.lstat().st_mode
                except OSError:
                    continue
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    found.append(entry)
            if seen > limit:
                break
        return found

    def read_manifest(self) -> dict[str, Any]:
        """manifest.json as plain data, read the one way (:func:`rlbench.results.manifest.read_manifest`: its
        checks, its errors, the keys the file has); for the analysis of a folder already opened
        (:mod:`rlbench.results.session`)."""
        from rlbench.results.manifest import read_manifest  # pydantic: not for the trial process

        return read_manifest(self.manifest).as_json()

    def next_attempt(self, trial_id: str) -> Path:
        """``attempts/<trial_id>/<n>``: the first free attempt number, from 1."""
        root = self.attempts_dir / trial_id
        n = 1
        while (root / str(n)).exists():
            n += 1
        return root / str(n)

    def move_to_attempts(self, trial_id: str) -> Path:
        """Move a trial's folder to its next attempt folder (one rename: atomic); returns where it went."""
        source = self.trial(trial_id).path
        target = self.next_attempt(trial_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        fsync_dir(source.parent)
        fsync_dir(target.parent)
        return target


@dataclass(frozen=True)
class HistoryFolder:
    """``rlbench history``'s folder: one sweep folder per run in ``runs/`` (each run adds releases or rounds to the
    same history, or confirms a flagged step), and at the top what is derived from all of them: ``history.json``,
    ``history.html`` and ``plots/``::

        history.json, history.html, plots/      the history over every run (derived; rebuilt after each run)
        runs/01-history/                         a sweep folder: the releases of one invocation, interleaved
        runs/02-confirm-<a>-<b>-<n>/             a flagged step's two releases alone, interleaved (one configuration)
        .rlbench.lock                            held while a run or the page is written
    """

    path: Path
    """The folder (``--out``)."""

    runs_dir = _File(HISTORY_RUNS_DIR)
    plots = _File(PLOTS_DIR)

    def holds_history(self) -> bool:
        """Whether the folder holds a history (runs, or its derived files)."""
        return self.runs_dir.is_dir() or (self.path / HISTORY_JSON).exists()

    def runs(self, kind: str | None = None) -> list[Path]:
        """The run folders, oldest first; only ``history`` or ``confirm`` runs when ``kind`` says so."""
        import re

        if not self.runs_dir.is_dir():
            return []
        found = []
        for p in self.runs_dir.iterdir():
            m = re.fullmatch(HISTORY_RUN_PATTERN, p.name)
            if m and p.is_dir() and not p.is_symlink() and (kind is None or m.group(2) == kind):
                found.append((int(m.group(1)), p))
        return [p for _, p in sorted(found)]

    def new_run(self, kind: str, label: str = "") -> Path:
        """The folder of the next run (not made): ``runs/NN-<kind>[-<label>]``, NN one past the highest."""
        import re

        numbers = [int(re.match(r"\d+", p.name).group()) for p in self.runs()]  # type: ignore[union-attr]
        name = f"{max(numbers, default=0) + 1:02d}-{kind}" + (f"-{label}" if label else "")
        if not re.fullmatch(HISTORY_RUN_PATTERN, name):
            raise ValueError(f"not a run name: {name!r}")
        return self.runs_dir / name
