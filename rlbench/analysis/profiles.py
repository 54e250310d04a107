"""Stack profiles: from py-spy's speedscope files to per-function figures, per role and configuration.

A profile (``trials/<id>/profiles/<role>-<pid>.speedscope.json``) holds one list of sampled
stacks per thread of the process (speedscope's "sampled" profiles, root frame first). py-spy
records a thread only while it is active (running or runnable, not waiting), so a function's
share of a process's samples is its share of the time that process was doing something.

Per process and function (name, file and first line, py-spy's ``--function``):

- ``self_samples``: samples whose innermost frame is the function (time spent in its own code,
  and with native frames off, in the C code it called);
- ``total_samples``: samples with the function anywhere on the stack, counted once per sample
  (recursion does not count twice);
- ``self_frac``, ``total_frac``: those over all of the process's samples (every thread).

Rules for the report's verdict (docs/ANALYSIS.md): a role's function *dominates* when its self
time is at least :data:`rlbench.analysis.findings.DOMINANT_SELF_FRAC` of the role's samples; the
role's *trunk* (left out of the top-total table) is the functions on at least
:data:`~rlbench.analysis.findings.TRUNK_FRAC` of its stacks with under
:data:`~rlbench.analysis.findings.TRUNK_SELF_FRAC` self time.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rlbench.analysis.findings import DOMINANT_SELF_FRAC, TRUNK_FRAC, TRUNK_SELF_FRAC
from rlbench.results.events_file import ProfileEvent, TrialEvent, first
from rlbench.results.layout import TrialFolder
from rlbench.results.tables import PROFILE_SCHEMA

#: Functions listed per role and configuration in the report (by self and by total time).
TOP_FUNCTIONS = 8
#: Roles the report shows profiles of (the others are in profiles.parquet).
REPORT_ROLES = ("driver", "learner", "env_runner")

Frame = tuple[str, str, int]
"""(function, file, first line) as py-spy names a frame."""
#: The frame a sample with an empty stack is put in, so that every sample is some function's.
NO_FRAME: Frame = ("<no Python frame>", "", 0)


@dataclass
class Profile:
    """One process's stack samples, all threads together."""

    frames: list[Frame]
    """The distinct frames; stacks index into this list."""
    stacks: Counter
    """Stack (tuple of frame indices, root first) -> how many samples had it."""

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())


def read_speedscope(path: Path) -> Profile:
    """A speedscope file as py-spy writes it (every thread's samples merged; weights are equal)."""
    data = json.loads(Path(path).read_text())
    frames = [
        (str(f.get("name", "?")), str(f.get("file") or ""), int(f.get("line") or 0))
        for f in (data.get("shared") or {}).get("frames", [])
    ]
    stacks: Counter = Counter()
    for profile in data.get("profiles", []):
        if profile.get("type") == "sampled":
            stacks.update(tuple(int(i) for i in stack) for stack in profile.get("samples", []))
    return Profile(frames, stacks)


def function_counts(profile: Profile) -> dict[Frame, tuple[int, int]]:
    """Frame -> (self samples, total samples) of one profile."""
    self_n: Counter = Counter()
    total_n: Counter = Counter()
    for stack, n in profile.stacks.items():
        if not stack:  # an active thread with no Python frame (starting or ending): counted, not dropped
            self_n[NO_FRAME] += n
            total_n[NO_FRAME] += n
            continue
        self_n[profile.frames[stack[-1]]] += n
        for frame in {profile.frames[i] for i in stack}:
            total_n[frame] += n
    return {frame: (self_n.get(frame, 0), total) for frame, total in total_n.items()}


def profile_rows(trial_id: str, role: str, pid: int, profile: Profile) -> list[dict[str, Any]]:
    """profiles.parquet rows of one process, most total time first."""
    samples = profile.samples
    rows = [
        {
            "trial_id": trial_id,
            "role": role,
            "pid": pid,
            "function": name,
            "file": file,
            "line": line,
            "self_samples": s,
            "total_samples": t,
            "self_frac": s / samples,
            "total_frac": t / samples,
        }
        for (name, file, line), (s, t) in function_counts(profile).items()
    ]
    return sorted(rows, key=lambda r: (-r["total_samples"], -r["self_samples"], r["function"]))


def profiles_frame(trials: list[TrialFolder]) -> pd.DataFrame:
    """profiles.parquet: every profile of every trial (a file py-spy left unreadable is skipped)."""
    rows: list[dict[str, Any]] = []
    for trial in trials:
        for role, pid, path in trial.profile_files():
            try:
                profile = read_speedscope(path)
            except (OSError, ValueError, TypeError, AttributeError, IndexError):
                continue
            if profile.samples:
                rows.extend(profile_rows(trial.trial_id, role, pid, profile))
    return pd.DataFrame(rows, columns=[f.name for f in PROFILE_SCHEMA]).astype(
        {"pid": "int64", "line": "int64", "self_samples": "int64", "total_samples": "int64"}
    )


def role_stacks(trial: TrialFolder, role: str) -> Counter:
    """Stack (tuple of ``function (file:line)`` labels, root first) -> samples, over every process
    of ``role`` in the trial: what its flame graph draws."""
    merged: Counter = Counter()
    for r, _, path in trial.profile_files():
        if r != role:
            continue
        try:
            profile = read_speedscope(path)
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            continue
        labels = [frame_label(f) for f in profile.frames]
        for stack, n in profile.stacks.items():
            merged[tuple(labels[i] for i in stack)] += n
    return merged


def frame_label(frame: Frame) -> str:
    """``function (file:line)``, the file as :func:`short_file` gives it."""
    name, file, line = frame
    return f"{name} ({short_file(file)}:{line})" if file else name


@dataclass
class RoleProfile:
    """A role's profile in one configuration: its processes in every ok repeat, together."""

    role: str
    samples: int
    """Samples of every process of the role (all repeats)."""
    processes: int
    """How many processes the samples come from."""
    top_self: pd.DataFrame
    """function, file, line, self_frac, total_frac: most self time first (at most TOP_FUNCTIONS)."""
    top_total: pd.DataFrame
    """The same columns, most total time first; the role's trunk (:data:`TRUNK_FRAC`) left out."""
    verdict: str | None
    """Plain words naming the dominant function, or None when none dominates."""


#: How the verdict names a role: (one process, several).
ROLE_NAMES = {
    "driver": ("the driver", "the drivers"),
    "learner": ("the learner", "the learners"),
    "env_runner": ("the env runner", "the env runners"),
    "ray_system": ("Ray's agent", "Ray's agents"),
    "other": ("the other process", "the other processes"),
}


def role_profiles(
    profiles: pd.DataFrame, trial_ids: list[str], roles: tuple[str, ...] = REPORT_ROLES
) -> list[RoleProfile]:
    """Per role, the top functions of the trials ``trial_ids`` (one configuration's ok repeats):
    samples summed over their processes, shares of the role's samples."""
    data = profiles[profiles["trial_id"].isin(trial_ids)]
    out = []
    for role in roles:
        mine = data[data["role"] == role]
        if mine.empty:
            continue
        # every process's sample count: its rows' self samples add up to it
        samples = int(mine["self_samples"].sum())
        if samples <= 0:
            continue
        by = mine.groupby(["function", "file", "line"], as_index=False)[["self_samples", "total_samples"]].sum()
        by["self_frac"] = by["self_samples"] / samples
        by["total_frac"] = by["total_samples"] / samples
        columns = ["function", "file", "line", "self_frac", "total_frac"]
        top_self = by.sort_values(["self_samples", "total_samples"], ascending=False).head(TOP_FUNCTIONS)[columns]
        branches = by[~((by["total_frac"] >= TRUNK_FRAC) & (by["self_frac"] < TRUNK_SELF_FRAC))]
        top_total = branches.sort_values(["total_samples", "self_samples"], ascending=False).head(TOP_FUNCTIONS)[
            columns
        ]
        processes = mine.groupby(["trial_id", "pid"]).ngroups
        per_trial = processes / max(1, mine["trial_id"].nunique())
        one, several = ROLE_NAMES.get(role, (role, role))
        top = top_self.iloc[0] if len(top_self) else None
        verdict = (
            None
            if top is None
            else dominance_verdict(
                one if per_trial <= 1 else several,
                per_trial > 1,
                str(top["function"]),
                f"{short_file(top['file'])}:{int(top['line'])}" if top["file"] else "",
                float(top["self_frac"]),
            )
        )
        out.append(
            RoleProfile(
                role, samples, processes, top_self.reset_index(drop=True), top_total.reset_index(drop=True), verdict
            )
        )
    return out


def dominance_verdict(subject: str, plural: bool, function: str, place: str, self_frac: float) -> str | None:
    """``the learner spends 62% of its active time in _single_tensor_adam (torch/optim/adam.py:345)
    itself`` for a role's top function (``place``: its ``file:line``, or empty) when its self share
    reaches :data:`DOMINANT_SELF_FRAC`, else None."""
    if self_frac < DOMINANT_SELF_FRAC:
        return None
    where = f" ({place})" if place else ""
    verb, their = ("spend", "their") if plural else ("spends", "its")
    return f"{subject} {verb} {self_frac:.0%} of {their} active time in {function}{where} itself"


def no_dominance_text() -> str:
    """What the report says of a role whose top function stays under :data:`DOMINANT_SELF_FRAC`."""
    return f"no single function dominates (none takes {DOMINANT_SELF_FRAC:.0%} of the samples in its own code)"


def short_file(path: str) -> str:
    """A frame's file as a reader knows it: from the package on (``torch/optim/adam.py``) for
    installed packages and the standard library, else the last two parts of the path."""
    text = str(path)
    for marker in ("site-packages/", "dist-packages/"):
        if marker in text:
            return text.rsplit(marker, 1)[1]
    parts = text.split("/")
    for i, part in enumerate(parts):
        if part.startswith("python3") and i > 0 and parts[i - 1] == "lib":
            return "/".join(parts[i + 1 :]) or text
    return "/".join(parts[-2:])


def profile_columns(events: list[TrialEvent]) -> dict[str, Any]:
    """One trial's profiling columns from its ``profile`` event (docs/SCHEMA.md): ``profile_status``
    (``off`` without one), ``profile_note``, ``profile_window_s``, ``profile_processes`` (profiled
    ok), ``profile_cpu_pct`` (py-spy's CPU, all its processes, in % of one core over the window)."""
    event = first(events, ProfileEvent)
    if event is None:
        return {
            "profile_status": "off",
            "profile_note": None,
            "profile_window_s": None,
            "profile_processes": 0,
            "profile_cpu_pct": None,
        }
    start, stop, cpu = event.t_start_s, event.t_stop_s, event.cpu_s
    window = stop - start if start is not None and stop is not None else None
    return {
        "profile_status": event.status,
        "profile_note": event.note,
        "profile_window_s": window,
        "profile_processes": sum(p.get("status") == "ok" for p in event.processes),
        "profile_cpu_pct": 100.0 * cpu / window if cpu is not None and window else None,
    }


def add_profile_columns(trials: pd.DataFrame, events_by_trial: dict[str, list[TrialEvent]]) -> None:
    """Add the profiling columns to ``trials`` (in place)."""
    if trials.empty:
        return
    rows = {t: profile_columns(events_by_trial.get(t, [])) for t in trials["trial_id"]}
    for column in ("profile_status", "profile_note", "profile_window_s", "profile_processes", "profile_cpu_pct"):
        values = trials["trial_id"].map(lambda t, c=column: rows[t][c])
        trials[column] = values if column in ("profile_status", "profile_note") else pd.to_numeric(values)
