"""The spec's optional ``autoconfig:`` section: the objective, the budget, the baseline, the search's knobs.

An autoconfig spec is an ordinary sweep spec whose ``grid:`` is the search space; this section
says how to search it. The sweep's spec model does not know it yet: the driver reads it off the
mapping before validating the rest (``AutoconfigSection.model_validate(data.pop("autoconfig", {}))``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlbench.analysis.findings import CHANGE_THRESHOLD
from rlbench.autoconfig.decide import EXTENDED_ROUNDS, MAX_ROUNDS, MIN_ROUNDS
from rlbench.autoconfig.search import ETA, FINALISTS, FIRST_RUNG_READINGS
from rlbench.spec.limits import MAX_SECONDS, MAX_SEED


class AutoconfigSection(BaseModel):
    """How ``rlbench autoconfig`` searches the grid (docs/AUTOCONFIG.md)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

    objective: Literal["throughput", "time_to_target"] = "throughput"
    """``throughput``: env steps/s over a trial's steady window; ``time_to_target``: seconds to the
    spec's ``stop:`` target (trials that miss it within ``trial_s`` are censored, not dropped)."""
    budget_s: float | None = Field(None, gt=0, le=MAX_SECONDS)
    """Seconds for the whole run (probes, search, race); ``--budget`` on the command line wins."""
    baseline: dict[str, Any] = Field(default_factory=dict)
    """Grid axis -> value of the configuration to beat; an axis left out takes the spec's base value."""
    trial_s: float | None = Field(None, gt=0, le=MAX_SECONDS)
    """A cap on each trial's training seconds. Every trial runs the spec's ``stop:`` (its iterations and/or
    seconds; time-to-target trials end censored at it); None: the spec's stop alone, a trial of iterations
    only being cut at twice what the probes predict for it (docs/AUTOCONFIG.md)."""
    cold_start_s: float | None = Field(None, ge=0, le=MAX_SECONDS)
    """Expected seconds of a trial outside its training (process, runtime, build, shutdown) until the
    probes measure them; None: the framework's own figure (its adapter's ``cold_start_s``)."""
    search_share_pct: float = Field(60.0, gt=0, le=100)
    """The most of the budget the search may charge; the race keeps at least its minimum rounds and gets
    what the search leaves."""
    eta: int = Field(ETA, ge=2, le=10)
    """Successive halving's factor: rung r adds ``first_rung_readings * eta**r`` trials each."""
    first_rung_readings: int = Field(FIRST_RUNG_READINGS, ge=1, le=100)
    """Trials per configuration in the first rung (by default the fewest on which one can be dropped, the analysis'
    ``REPEATS_FOR_EVIDENCE``); the budget's plan gives fewer when it cannot buy them (docs/AUTOCONFIG.md)."""
    finalists: int = Field(FINALISTS, ge=1, le=100)
    """The search hands over to the race at this many configurations or fewer; the race is sized for them
    and the baseline."""
    min_rounds: int = Field(MIN_ROUNDS, ge=2, le=1000)
    """Race rounds before the change rule may end it."""
    max_rounds: int = Field(MAX_ROUNDS, ge=2, le=1000)
    """Race rounds after which it ends."""
    tolerance_pct: float = Field(100 * CHANGE_THRESHOLD, ge=0, le=50)
    """A configuration within this much of the best median is as good as the best (the cheapest wins), and the
    race ends once every other one is below the leader or within this much of it by every interval (the
    default: the change threshold every command uses, ``CHANGE_THRESHOLD``, 5)."""
    warm_windows: int = Field(EXTENDED_ROUNDS, ge=0, le=100)
    """The walk's readings from warm trials (issue 56, docs/AUTOCONFIG.md "Warm readings"): each point's trial is
    built once and read in up to this many windows (each the spec's steady iterations), paused between them while
    the other points read theirs, then a new process; 0: every reading a cold trial of its own. 12, the most rounds a
    step's race runs (``EXTENDED_ROUNDS``): a step's race reads each side from one process. Why one suffices here: a
    process's own offset measured 0-3.6% of throughput against 17-20% between windows of one process (42 races of A
    against A, CartPole on this 2-core machine: docs/MEASUREMENT.md 11); simulated with 4% offsets (the walk's step
    race and its move, 400 races a cell, window noise 14% and 20%), identical points moved the walk in 3.5% and 3.2%
    of steps at 12 windows a process against 4.2% and 3.8% at 6, and a planted 1.15x and 1.3x were found as often.
    At 6 (2026-11-30, 3 before) a race past 6 rounds launched a new process a side for its 7th: inference_wide's walk
    took 10 processes for 42 windows, 127 s, readings 35% of it; at 12, 6 processes for 40 windows, 97 s, 43%."""
    seed: int = Field(0, ge=0, le=MAX_SEED)
    """What the trial seeds derive from (the search itself has no randomness)."""

    def search_cap_s(self, budget_s: float) -> float:
        """The most seconds of ``budget_s`` the search may charge."""
        return budget_s * self.search_share_pct / 100.0
