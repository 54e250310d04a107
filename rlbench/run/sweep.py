"""Sweep orchestration: plan, lock the folder, run every trial in turn, keep the manifest.

Raises :class:`~rlbench.results.lock.OutDirError` before writing anything when the output folder
cannot be used; runs only what a resume must run; stops cleanly on Ctrl-C. The tables are derived
afterwards by the caller (:mod:`rlbench.analysis.tables`).
"""

from __future__ import annotations

import datetime as dt
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.text import Text

from rlbench.measure.machine import cluster_dict, probe_machine, software_versions
from rlbench.planning.plan import TrialPlan, plan_cluster_trials, plan_trials, repeat_seeds, write_plan
from rlbench.planning.skip_summary import skip_group, skip_summary
from rlbench.results.events_file import ProfileEvent, StartEvent
from rlbench.results.layout import ResultsFolder
from rlbench.results.manifest import Manifest
from rlbench.results.records import TrialRecord, read_record, write_record
from rlbench.results.session import WriteSession, open_for_write
from rlbench.results.text import plain
from rlbench.run.ceilings import measure_env_ceilings
from rlbench.run.envs import INSTALL_FAILED, with_environments
from rlbench.run.manifest import manifest, run_facts
from rlbench.run.parallel import PARALLEL_PRELOAD, ParallelRun
from rlbench.run.processes import ProcessRef, kill_survivors
from rlbench.run.progress import SweepProgress
from rlbench.run.raytoken import secure_ray
from rlbench.run.resume import RESUMABLE_SPEC_KEYS, ResumePlan, plan_resume, recorded_seeds
from rlbench.run.switches import with_switches
from rlbench.run.trial import Launched, TrialLauncher, launch_trial, run_trial
from rlbench.run.warm import ROUND_GROUP, WarmPool, read_in_turns, warm_group
from rlbench.spec.model import LoadedSpec
from rlbench.worker.nvml import open_gpus
from rlbench.worker.rapl import POWERCAP_ROOT, open_rapl


@dataclass
class SweepOutcome:
    """What a sweep produced."""

    out_dir: Path
    """The result folder."""
    records: list[TrialRecord] = field(default_factory=list)
    """One per trial with a verdict, in plan order (trials kept from an earlier run included)."""
    trial_ids: list[str] = field(default_factory=list)
    """Every planned trial."""
    kept: int = 0
    """Trials kept as they were from an earlier run of the folder (resume)."""
    interrupted: bool = False
    """The sweep was stopped by Ctrl-C or SIGTERM before every trial ran."""
    skip_groups: dict[str, str] = field(default_factory=dict)
    """Trial id -> why it is skipped, in words shared by every trial skipped for the same kind of
    reason (:func:`~rlbench.planning.skip_summary.skip_group`); the final table shows one line per group."""

    def count(self, status: str) -> int:
        """Trials with this status."""
        return sum(r.status == status for r in self.records)

    @property
    def failed(self) -> list[TrialRecord]:
        """Trials that failed or timed out."""
        return [r for r in self.records if r.status in ("failed", "timeout")]

    @property
    def ended_in_teardown(self) -> list[TrialRecord]:
        """Ok trials whose process ended in their teardown, after training (their reason says how)."""
        return [r for r in self.records if r.status == "ok" and r.reason]

    @property
    def unfinished(self) -> int:
        """Planned trials without a final verdict (not run yet, or interrupted)."""
        done = {r.trial_id for r in self.records if r.status != "interrupted"}
        return sum(t not in done for t in self.trial_ids)


def default_out_dir(name: str, now: dt.datetime | None = None) -> Path:
    """``results/<name>/<YYYYmmdd-HHMMSS>``."""
    now = now or dt.datetime.now()
    return Path("results") / name / now.strftime("%Y%m%d-%H%M%S")


def move_aside(folder: ResultsFolder, trial_id: str) -> Path:
    """Move a trial's earlier attempt to ``attempts/<trial_id>/<n>/`` (one rename: atomic), first
    recording a verdict in it if the sweep died before writing one; kill any process of it still alive."""
    trial = folder.trial(trial_id)
    if read_record(trial) is None:
        write_record(
            trial,
            TrialRecord(
                trial_id=trial_id,
                status="interrupted",
                leftover_processes_killed=_kill_leftovers(trial),
                reason=f"the sweep stopped during this trial (killed?) after {trial.iterations_done()} iterations; no "
                "verdict was recorded; moved aside by a resume",
            ),
        )
    return folder.move_to_attempts(trial_id)


def _kill_leftovers(trial) -> int:
    """Kill what the dead sweep's trial left alive; returns how many. The folder may come from
    elsewhere (its events.jsonl forged): only processes of this user, inside the Linux session of
    the trial process it names, naming its Ray session exactly, and only when that trial process
    is gone (a live one is no leftover: it is someone's running process)."""
    start = trial.event(StartEvent) or StartEvent()
    pid, ticks = start.pid, start.start_ticks
    if pid is None or pid <= 1 or ProcessRef.of(pid) is not None:
        return 0
    return kill_survivors(set(), trial.session_dir(), ProcessRef(pid, ticks if ticks is not None else -1))


def run_sweep(
    loaded: LoadedSpec,
    out_dir: Path,
    *,
    console: Console,
    argv: list[str] | None = None,
    nvml=None,
    resume: bool = False,
    retry_failed: bool = False,
    cluster=None,
    powercap_root: str = POWERCAP_ROOT,
    pyspy: str | None = None,
    while_forkserver_starts: Callable[[], None] | None = None,
    resume_with: str | None = None,
    parallel: str | None = None,
) -> SweepOutcome:
    """Plan, run and store a whole sweep into ``out_dir`` (tables are built by the caller).

    Raises :class:`~rlbench.results.lock.OutDirError` before writing anything when ``out_dir`` cannot be
    used (:func:`~rlbench.results.session.open_for_write`: written, locked by another sweep, already holding
    results while ``resume`` is false, holding trials a resume could not be compared with). With ``resume``,
    runs only the trials that have no verdict or were interrupted (and failed/timed-out ones with
    ``retry_failed``). Ctrl-C stops the running trial cleanly and returns with ``outcome.interrupted`` set.
    ``pyspy``: the py-spy binary profiling uses (``profile_hz``; default the installed one).
    ``while_forkserver_starts``: the caller's own slow work (the command imports its tables and report
    modules, 2.0 s), run while the fork server imports Ray, RLlib and torch on another core, before the env
    ceilings measure. ``resume_with``: the command that continues the folder (default: this sweep's, with
    ``--resume``), named when the folder already holds results. ``parallel`` (with ``cluster``): ``--parallel``'s
    ``N`` or ``auto``, trials at once each on a node set of its own (:mod:`rlbench.run.parallel`).
    """
    argv = list(argv or sys.argv)
    machine = probe_machine(nvml)
    software = software_versions()
    session = open_for_write(
        out_dir,
        "resume" if resume else "new",
        facts=run_facts(loaded, machine, software, RESUMABLE_SPEC_KEYS),
        resume_with=resume_with
        or f"{resume_command(loaded.source, out_dir, loaded.quick)}  (add --retry-failed to rerun failed ones too)",
    )
    # A resume reuses the seeds its trials ran with (their plans must stay the same); else drawn or derived.
    held = session.manifest  # None: a new folder
    seeds = repeat_seeds(loaded.spec, recorded_seeds(session.folder, held) if held is not None else None)
    if cluster is not None:  # --address: every trial a driver of that cluster (rlbench/run/cluster.py)
        plans = plan_cluster_trials(loaded, cluster, seeds, parallel=parallel is not None)
    else:
        plans = plan_trials(loaded, machine, seeds)
    # a fidelity diagnosis only (switch_off, RLBENCH_SWITCH_OFF): said in every plan and the manifest
    plans, off = with_switches(plans)
    # each pinned variant's Python environment, made once and cached (rlbench/run/envs.py)
    plans = with_environments(plans, lambda text: console.print(Text(plain(text)), soft_wrap=True))

    def decide() -> ResumePlan:
        return (
            ResumePlan() if session.manifest is None else plan_resume(session.folder, plans, retry_failed=retry_failed)
        )

    decide()  # refuse an incomparable trial before writing anything, even the lock file
    with session:  # locked, and checked again under the lock
        decision = decide()  # again: another sweep may have finished trials meanwhile
        secure_ray(console, create=cluster is None)  # before any trial's Ray: the token file, private
        info = manifest(loaded, machine, plans, argv)
        info.repeat_seeds = seeds
        if off:
            info.switched_off = off
            said_off = (
                f"{', '.join(off)} switched off (a fidelity diagnosis: these results are not a "
                "normal rlbench measurement; which trials: switched_off in plan.json)"
            )
            console.print(Text(plain(said_off), style="yellow"))
        if cluster is not None:
            info.cluster = cluster_dict(cluster)
            if parallel is not None:
                info.parallel = parallel
        if session.manifest is not None:  # a resume: the first run's manifest goes on (its command, start)
            made, info = info, session.manifest
            info.spec, info.trial_ids, info.repeat_seeds = made.spec, made.trial_ids, seeds
            if made.relative_values is not None:  # a resume may add grid points: their relative values resolved too
                info.relative_values = made.relative_values
            info.begin_resume(argv, now_iso(), rerun=decision.rerun, kept=len(decision.keep))
        session.save(info)
        return run_plans(
            loaded,
            session,
            plans,
            decision,
            info,
            console=console,
            nvml=nvml,
            powercap_root=powercap_root,
            pyspy=pyspy,
            while_forkserver_starts=while_forkserver_starts,
            parallel=ParallelRun(cluster, parallel) if parallel is not None else None,
        )


def _say_profile(console: Console, plan: TrialPlan, profile: ProfileEvent | None, noted: set[str | None]) -> None:
    """Say once per reason when a trial asked for profiles and got none or only some."""
    status, note = (profile.status, profile.note) if profile is not None else (None, None)
    if status in (None, "ok") or note in noted:
        return
    noted.add(note)
    console.print(Text.assemble((f"{plan.trial_id} profile {status}", "yellow"), ": ", plain(str(note))))


def now_iso() -> str:
    """Now, UTC, ISO 8601 (the manifest's times)."""
    return dt.datetime.now(dt.timezone.utc).isoformat()


def resume_command(
    config: Path, out_dir: Path, quick: bool = False, address: str | None = None, parallel: str | None = None
) -> str:
    """The command that resumes this sweep (``quick``: a ``--quick`` one, which only ``--quick`` resumes; a
    ``--parallel`` one's with its address and ``--parallel``)."""
    extra = ["--address", address] if address else []
    return shlex.join(
        [
            "rlbench",
            "sweep",
            str(config),
            *(["--quick"] if quick else []),
            *extra,
            *(["--parallel", parallel] if parallel else []),
            "--out",
            str(out_dir),
            "--resume",
        ]
    )


def run_plans(
    loaded: LoadedSpec,
    session: WriteSession,
    plans: list[TrialPlan],
    decision: ResumePlan,
    info: Manifest,
    *,
    console: Console,
    nvml,
    powercap_root: str,
    pyspy: str | None = None,
    while_forkserver_starts: Callable[[], None] | None = None,
    said: bool = False,
    parallel: ParallelRun | None = None,
) -> SweepOutcome:
    """``said``: the machine's notes (no GPU, no energy counter) were said already (a later batch). ``parallel``:
    run trials at once, each on a node set of its own (:mod:`rlbench.run.parallel`)."""
    folder = session.folder
    outcome = SweepOutcome(
        folder.path,
        trial_ids=[p.trial_id for p in plans],
        skip_groups={p.trial_id: g for p in plans if (g := skip_group(p)) is not None},
    )
    for plan in plans:
        if not decision.runs(plan.trial_id):
            if (kept := read_record(folder.trial(plan.trial_id))) is not None:  # a kept trial has its record
                outcome.records.append(kept)
            outcome.kept += 1
    to_run = [p for p in plans if decision.runs(p.trial_id)]
    if decision.keep or decision.rerun:
        resuming = (
            f"resuming: {len(decision.keep)} finished trials kept, {len(to_run)} to run "
            f"({len(decision.rerun)} again: {', '.join(f'{k} ({v})' for k, v in decision.rerun.items()) or '-'})"
        )
        console.print(Text(plain(resuming)))
    for line in skip_summary(to_run):
        console.print(plain(line), highlight=False, markup=False, soft_wrap=True)
    gpus = open_gpus(nvml) if to_run else None
    if gpus is None and to_run and not said:
        console.print("[dim]No GPU (NVML found none): GPU columns will be null.[/]")
    rapl = open_rapl(powercap_root) if to_run else None
    if to_run:
        info.cpu_energy_zones = rapl.describe() if rapl is not None else []
        if rapl is None and not said:
            no_rapl = (
                f"No CPU energy counter (no readable RAPL package zone under {powercap_root}): "
                "cpu_energy_j will be null."
            )
            console.print(Text(plain(no_rapl), style="dim"))
    spec = loaded.spec
    # a fork server only when some trial starts from it (the forkserver switch, and a variant's own environment,
    # start a fresh process per trial: history and bisect preloaded torch and Ray for none)
    launcher = TrialLauncher(
        fresh_process=all("forkserver" in p.switched_off or (p.packages and p.packages.python) for p in to_run),
        frameworks=() if parallel else tuple(dict.fromkeys(p.config.framework for p in to_run)) or ("rllib",),
        also=PARALLEL_PRELOAD if parallel else (),
    )
    runnable = any(p.skip_reason is None for p in to_run)
    if runnable:
        launcher.warm()  # its imports run beside the caller's own (while_forkserver_starts), not in trial 1
    if while_forkserver_starts is not None:
        while_forkserver_starts()
    if runnable:
        launcher.wait_ready()  # nothing imports while the ceilings measure
    measure_env_ceilings(folder, to_run, spec, console)
    early: dict[str, Launched] = {}  # trial id -> launched while the previous trial shut down
    noted: set[str | None] = set()

    def prepare(plan: TrialPlan):
        if folder.trial(plan.trial_id).exists():
            moved = move_aside(folder, plan.trial_id)
            console.print(Text(plain(f"{plan.trial_id}: earlier attempt moved to {moved}"), style="dim"))
        return write_plan(folder, plan)

    def launch_next(after: int) -> None:
        """The previous trial finished training: launch the next runnable one (skipped ones need no process)."""
        nxt = next((p for p in to_run[after + 1 :] if p.skip_reason is None), None)
        if nxt is not None and nxt.windows is None:  # a warm trial starts in its pool, at its first window's gate
            early[nxt.trial_id] = launch_trial(nxt, prepare(nxt), launcher, gpus, rapl, gated=True)

    def close() -> None:
        for trial_id, launched in early.items():  # stopped before its turn: no process left, no record
            launched.end(folder.trial(trial_id))
        if gpus is not None:
            gpus.close()
        order = {p.trial_id: i for i, p in enumerate(plans)}
        outcome.records = sorted((r for r in outcome.records if r is not None), key=lambda r: order[r.trial_id])
        info.end(now_iso(), interrupted=outcome.interrupted, statuses={r.trial_id: r.status for r in outcome.records})
        session.save(info)

    if parallel is not None:
        from rlbench.run.parallel import run_parallel

        try:
            outcome.interrupted = run_parallel(
                to_run,
                folder,
                outcome.records,
                run=parallel,
                launcher=launcher,
                console=console,
                prepare=prepare,
                pyspy=pyspy,
            )
        finally:
            close()
        return outcome
    pool: WarmPool | None = None
    try:
        with SweepProgress(console, to_run) as progress:
            warm_done: set[str] = set()
            for i, plan in enumerate(to_run):
                if plan.trial_id in warm_done:
                    continue
                if plan.windows is not None and plan.skip_reason is None:  # rounds_per_process: read in turns
                    group = warm_group(to_run, i)
                    pool = pool or _round_pool(
                        folder, launcher, prepare, outcome, progress=progress, gpus=gpus, rapl=rapl, console=console
                    )
                    read_in_turns(pool, group, lambda p, k: progress.start(p))
                    warm_done.update(p.trial_id for p in group)
                    continue
                launched = early.pop(plan.trial_id, None)
                trial = folder.trial(plan.trial_id) if launched else prepare(plan)
                if plan.skip_reason:  # never started; an install that failed is a failure, not a choice
                    status = "failed" if plan.skip_reason.startswith(INSTALL_FAILED) else "skipped"
                    record = TrialRecord(trial_id=plan.trial_id, status=status, reason=plan.skip_reason)
                    write_record(trial, record)
                else:

                    def on_poll(events, plan=plan):
                        progress.poll(plan, events)

                    progress.start(plan)
                    overlap = spec.overlap_trial_start and not plan.ray_address
                    try:
                        record = run_trial(
                            plan,
                            trial,
                            launcher,
                            gpus,
                            on_poll,
                            rapl,
                            launched=launched,
                            on_trained=(lambda i=i: launch_next(i)) if overlap else None,
                            pyspy=pyspy,
                        )
                    except KeyboardInterrupt:
                        if (stopped := read_record(trial)) is not None:  # none yet: close() left it out anyway
                            outcome.records.append(stopped)
                        raise
                    progress.finish(plan, record)
                    _say_profile(console, plan, trial.event(ProfileEvent), noted)
                outcome.records.append(record)
                # skipped ones were said up front, once per reason; an ok one with a reason ended in its teardown
                if record.status not in ("ok", "skipped") or (record.status == "ok" and record.reason):
                    # the reason is the env's own error text: plain text, never markup (a "[...]" in it
                    # once raised MarkupError here and ended the sweep)
                    console.print(
                        Text.assemble((f"{plan.trial_id} {record.status}", "yellow"), ": ", plain(record.reason))
                    )
    except KeyboardInterrupt:  # the pool ended its warm trials already (WarmPool.read)
        outcome.interrupted = True
    finally:
        try:
            if pool is not None:
                pool.close(interrupted=outcome.interrupted)
        finally:
            close()
    return outcome


def _round_pool(folder, launcher, prepare, outcome: SweepOutcome, *, progress, gpus, rapl, console) -> WarmPool:
    """The pool of a sweep's ``rounds_per_process`` trials: each record goes to the outcome and the progress, a
    failure's reason to the console, as a cold trial's."""
    plans: dict[str, TrialPlan] = {}

    def on_record(record: TrialRecord) -> None:
        outcome.records.append(record)
        if (plan := plans.get(record.trial_id)) is not None:
            progress.finish(plan, record)
        if record.status not in ("ok", "skipped", "interrupted") or (record.status == "ok" and record.reason):
            console.print(Text.assemble((f"{record.trial_id} {record.status}", "yellow"), ": ", plain(record.reason)))

    def on_events(plan: TrialPlan, events) -> None:
        plans[plan.trial_id] = plan
        progress.poll(plan, events)

    return WarmPool(
        folder,
        launcher,
        prepare=prepare,
        on_record=on_record,
        gpus=gpus,
        rapl=rapl,
        live_limit=ROUND_GROUP,
        on_events=on_events,
    )
