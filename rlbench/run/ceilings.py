"""Before the trials: each distinct env's ceiling (the env stepping alone), for ``sampling_efficiency``."""

from __future__ import annotations

import json

import psutil
from rich.console import Console
from rich.text import Text

from rlbench.planning.plan import TrialPlan
from rlbench.results.files import write_json
from rlbench.results.layout import ResultsFolder
from rlbench.results.text import plain
from rlbench.spec.model import SweepSpec
from rlbench.studies.envbench import ceiling_procs, measure_ceiling, result_dict, trial_ceiling_key

#: How long past its measuring time a ceiling may take to report (a hang, or one step that slow).
GRACE_S = 15.0


def measure_env_ceilings(folder: ResultsFolder, plans: list[TrialPlan], spec: SweepSpec, console: Console) -> None:
    """Measure each distinct env ceiling the plans need (not yet in ``env_ceilings.json``), on the
    trial's own cores, before any trial runs, ``spec.env_ceiling_s`` each; a ceiling that cannot be measured (the env
    raises, hangs past those seconds + the grace, or holds more than the spec's ``trial_memory_limit_bytes``, else a
    quarter of this machine's memory) is stored with its error
    and its processes are killed: the trial itself then meets the fault and is judged as usual. The
    grace is 15 s, or the trial's ``trial_timeout_s`` if shorter: an env that hangs that long would
    time its trial out anyway."""
    path, seconds = folder.ceilings, spec.env_ceiling_s
    ceilings = json.loads(path.read_text()) if path.exists() else {}
    wanted: dict[str, TrialPlan] = {}
    for plan in plans:
        if plan.skip_reason or getattr(plan, "ray_address", None):  # a cluster's cores are not this machine's
            continue
        key = trial_ceiling_key(plan.config, plan.cpus)
        if key not in ceilings:
            wanted.setdefault(key, plan)
    if seconds <= 0 or not wanted:
        return
    max_rss_bytes = spec.trial_memory_limit_bytes or psutil.virtual_memory().total // 4
    if not console.is_interactive:  # a spinner shows nothing in a log
        console.print(f"measuring {len(wanted)} env ceiling(s), {seconds:g} s each, before the trials", highlight=False)
    with console.status(f"measuring {len(wanted)} env ceiling(s), {seconds:g} s each") as status:
        for key, plan in wanted.items():
            status.update(Text(plain(f"env ceiling: {key}")))  # env_config is the spec's text, not markup
            env = plan.config.environment
            try:
                result = measure_ceiling(
                    env.env,
                    env.env_config,
                    seconds=seconds,
                    cores=plan.cores,
                    procs=ceiling_procs(plan.config),
                    max_rss_bytes=max_rss_bytes,
                    grace_s=min(GRACE_S, plan.timeout_s),
                )
                ceilings[key] = result_dict(result)
            except Exception as e:  # noqa: BLE001 - the trial will fail on the same env and say why; keep going
                ceilings[key] = {"error": f"{type(e).__name__}: {e}"}
            write_json(path, ceilings)
