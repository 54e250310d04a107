"""A results folder that takes trials in batches: ``rlbench autoconfig``'s trials, run by the sweep's own machinery.

Opened through the one session, as a sweep's folder is; each batch is run by :func:`rlbench.run.sweep.run_plans`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from rlbench.measure.machine import ClusterInfo, MachineInfo, cluster_dict, software_versions
from rlbench.planning.plan import TrialPlan, write_plan
from rlbench.results.layout import TrialFolder
from rlbench.results.manifest import Manifest
from rlbench.results.records import TrialRecord
from rlbench.results.session import WriteSession, open_for_write
from rlbench.run.ceilings import measure_env_ceilings
from rlbench.run.manifest import manifest, run_facts
from rlbench.run.parallel import ParallelRun
from rlbench.run.raytoken import secure_ray
from rlbench.run.resume import ResumePlan
from rlbench.run.sweep import SweepOutcome, move_aside, now_iso, run_plans
from rlbench.run.trial import TrialLauncher
from rlbench.run.warm import WarmPool, WindowRead
from rlbench.spec.model import LoadedSpec
from rlbench.worker.rapl import POWERCAP_ROOT, open_rapl


@dataclass(frozen=True)
class RunContext:
    """What the command that starts a run gives the folder that runs its trials, once (``rlbench autoconfig``'s driver
    and its :class:`TrialBatches`)."""

    console: Console
    """Where the run speaks."""
    machine: MachineInfo
    """This machine, probed once by the command."""
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    """The command line, kept in the manifest."""
    cluster: ClusterInfo | None = None
    """The Ray cluster every trial drives (``--address``); None: a private local Ray per trial."""
    resume: bool = False
    """Continue the run in the folder (``--resume``)."""
    resume_with: str | None = None
    """The command that continues the run, named when the folder already holds results."""
    parallel: str | None = None
    """``--parallel``'s ``N`` or ``auto`` (with ``cluster``): a batch's trials at once, each on nodes of its own."""


class TrialBatches:
    """A results folder that takes trials in batches (``rlbench autoconfig``): opened through the one
    session (:func:`~rlbench.results.session.open_for_write`: a resume is checked as a sweep's is, its
    format, spec, machine and software), locked while entered; each :meth:`run` appends the plans it is
    given (one whose folder exists without a verdict is moved aside and run again, as a resume does), and
    the manifest lists every trial run so far."""

    def __init__(self, loaded: LoadedSpec, out_dir: Path, context: RunContext, *, nvml=None):
        parallel, cluster = context.parallel, context.cluster  # --parallel is refused without a cluster
        self.parallel = ParallelRun(cluster, parallel) if parallel is not None and cluster is not None else None
        self.loaded, self.out_dir, self.context, self.nvml = loaded, Path(out_dir), context, nvml
        self.console = context.console
        self.session: WriteSession | None = None
        self._said = False
        self.pool: WarmPool | None = None

    @property
    def opened(self) -> WriteSession:
        """The folder's session, once :meth:`open` made it."""
        assert self.session is not None, "open the batches first"
        return self.session

    @property
    def info(self) -> Manifest:
        """The folder's manifest, as written last."""
        assert self.session is not None and self.session.manifest is not None, "enter the batches first"
        return self.session.manifest

    def open(self) -> TrialBatches:
        """Check the folder (nothing written): before anything of it is read (autoconfig's state file)."""
        if self.session is None:
            facts = run_facts(self.loaded, self.context.machine, software_versions())
            self.session = open_for_write(
                self.out_dir,
                "resume" if self.context.resume else "new",
                facts=facts,
                resume_with=self.context.resume_with,
            )
        return self

    def __enter__(self) -> TrialBatches:
        session = self.open().opened.lock()
        try:
            secure_ray(self.console, create=self.context.cluster is None)
            if session.manifest is not None:
                info = session.manifest
                info.begin_resume(self.context.argv, now_iso())
            else:
                info = manifest(self.loaded, self.context.machine, [], self.context.argv)
                if self.context.cluster is not None:
                    info.cluster = cluster_dict(self.context.cluster)
                if self.parallel is not None:
                    info.parallel = self.parallel.setting
            session.save(info)
        except BaseException:
            session.close()
            raise
        return self

    def run(self, plans: list[TrialPlan]) -> SweepOutcome:
        """Run ``plans`` (trial ids new to the folder, or ones without a verdict) into the folder."""
        info = self.info
        info.trial_ids = list(dict.fromkeys([*(info.trial_ids or []), *(p.trial_id for p in plans)]))
        info.differs_from_tune = list(
            dict.fromkeys([*info.differs_from_tune, *(d for p in plans for d in p.differs_from_tune)])
        )
        statuses = dict(info.statuses)
        outcome = run_plans(
            self.loaded,
            self.opened,
            plans,
            ResumePlan(),
            info,
            console=self.console,
            nvml=self.nvml,
            powercap_root=POWERCAP_ROOT,
            said=self._said,
            parallel=self.parallel,
        )
        self._said = True
        info.statuses = {**statuses, **info.statuses}
        self.opened.save(info)
        return outcome

    def warm_read(self, plan: TrialPlan) -> WindowRead:
        """Read the next measured window of a warm trial (issue 56, :mod:`rlbench.run.warm`), launching it when
        new: its env's ceiling measured first as a sweep's is, the manifest listing it at once and its status once
        it has ended. Ctrl-C ends every warm trial and raises KeyboardInterrupt again."""
        pool = self._listed([plan])
        return pool.read(plan)

    def warm_launch(self, plans: list[TrialPlan]) -> list[str]:
        """Launch the warm trials of ``plans`` together, each up to its first window (:meth:`WarmPool.launch`), their
        envs' ceilings measured first; the ids launched (as many as the pool has room for). Their windows are read
        by :meth:`warm_read` as any kept trial's."""
        pool = self._listed(plans)
        return pool.launch(plans)

    def _listed(self, plans: list[TrialPlan]) -> WarmPool:
        """The pool, with the plans it does not hold yet listed in the manifest and their envs' ceilings measured."""
        if self.pool is None:
            self.pool = self._open_pool(plans[0].config.framework)
        new = [p for p in plans if p.trial_id not in self.pool.live]
        if new:
            self.pool.settle()  # a ceiling is the env stepped alone: never beside a launch
            info = self.info
            info.trial_ids = list(dict.fromkeys([*(info.trial_ids or []), *(p.trial_id for p in new)]))
            info.differs_from_tune = list(
                dict.fromkeys([*info.differs_from_tune, *(d for p in new for d in p.differs_from_tune)])
            )
            self.opened.save(info)
            measure_env_ceilings(self.opened.folder, new, self.loaded.spec, self.console)
        return self.pool

    def holds(self, trial_id: str) -> bool:
        """Whether a warm trial is kept built with a window left to read."""
        return self.pool is not None and self.pool.holds(trial_id)

    def snapshot(self, trial_id: str, into: TrialFolder) -> None:
        """Write a kept warm trial as if it had ended now into ``into``, a copy's trial folder (the pool's
        :meth:`~rlbench.run.warm.WarmPool.snapshot`); the trial stays kept."""
        assert self.pool is not None and self.pool.holds(trial_id), trial_id
        self.pool.snapshot(trial_id, into)

    def retire(self, *trial_ids: str) -> None:
        """End these kept warm trials now, together (:meth:`~rlbench.run.warm.WarmPool.retire_all`; their records
        written); nothing for one that is not kept."""
        if self.pool is not None:
            self.pool.retire_all(list(trial_ids))

    def _open_pool(self, framework: str) -> WarmPool:
        folder = self.opened.folder
        launcher = TrialLauncher(frameworks=(framework,))
        launcher.warm()
        launcher.wait_ready()

        def prepare(plan: TrialPlan) -> TrialFolder:
            if folder.trial(plan.trial_id).exists():
                move_aside(folder, plan.trial_id)
            return write_plan(folder, plan)

        def on_record(record: TrialRecord) -> None:
            self.info.statuses = {**self.info.statuses, record.trial_id: record.status}
            self.opened.save(self.info)

        return WarmPool(folder, launcher, prepare=prepare, on_record=on_record, rapl=open_rapl(POWERCAP_ROOT))

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            interrupted = exc[0] is not None and issubclass(exc[0], KeyboardInterrupt)
            try:
                self.pool.close(interrupted=interrupted)
            finally:
                self.pool = None
                if self.session is not None and self.session.manifest is not None:
                    # warm trials end here, not in a batch: the run's end and every status, as a batch's end says them
                    info = self.session.manifest
                    info.end(now_iso(), interrupted=interrupted, statuses=dict(info.statuses))
                    self.session.save(info)
        if self.session is not None:
            self.session.close()
