"""``rlbench servebench``'s runs turned into its table: one row per (path, batch, state size, clients), and the
comparisons that answer the paper's question, with their evidence.

Per row, over the repeats that ran (each a run of every client of the cell, the paths' order rotating):

- ``states_per_s``: the median, with its bootstrap interval (:func:`~rlbench.analysis.stats.median_ci`);
- ``p50_ms``, ``p99_ms``: the median over repeats of each repeat's latency percentiles (every counted request
  of every client of the run);
- ``overhead_ms``: ``p50_ms`` less the ``inprocess`` path's ``p50_ms`` in the same cell (the forward pass
  alone, in the client's process): what getting there and back costs, per request;
- ``bytes_per_request``: request plus answer payload (HTTP bodies; for Ray calls the pickled arguments
  and result, out-of-band buffers included; 0 in-process);
- ``cpu_s_per_1000_states``: per process role, the median over repeats of CPU-seconds per 1,000 states.

A comparison of two paths in a cell (:func:`compare_paths`) is the one rule's unpaired comparison
(:func:`rlbench.analysis.change.unpaired`, as ``rlbench compare A B``'s), its :class:`~rlbench.analysis.change.Change`
held as it is and said in compare's words: the ratio of their median states/s with its bootstrap interval, called
a difference when the interval excludes 1 and the exact rank test agrees at
:data:`~rlbench.analysis.findings.SIGNIFICANCE`, which 3 repeats a side can reach (fewer say so).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rlbench.analysis.change import Change, unpaired
from rlbench.analysis.evidence import change_sentence
from rlbench.analysis.stats import median_ci
from rlbench.studies.servebench import MODELS, PAPER_TABLE3, PATHS

#: Pairs compared in every cell where both ran: (path, reference), read "path against reference".
COMPARISONS: tuple[tuple[str, str], ...] = (
    ("actor", "rest_json"),  # the paper's Table 3: a Ray actor against Clipper's REST
    ("actor", "rest_bytes"),  # the same without JSON
    ("serve_handle", "actor"),  # what Serve's handle adds to an actor call
    ("serve_bytes", "rest_bytes"),  # what Serve's HTTP proxy adds to a plain ASGI server
    ("serve_json", "serve_bytes"),  # what JSON costs inside Serve
    ("serve_batched", "serve_bytes"),  # what @serve.batch changes
    ("actor_inflight", "actor"),  # what k requests in flight buy
)
__all__ = [
    "COMPARISONS",
    "MODELS",
    "PAPER_BATCH",
    "PAPER_TABLE3",
    "PATHS",
    "PathComparison",
    "ServeRow",
    "compare_paths",
    "gap_change",
    "paper_rows",
    "summarize_rows",
]  # the study's tables pass through here to the report room

#: The cell of the paper's table: batch 64.
PAPER_BATCH = int(PAPER_TABLE3["batch"])


@dataclass(frozen=True)
class ServeRow:
    """One path in one cell, over its repeats."""

    path: str
    batch: int
    """States per request."""
    input_bytes: int
    """Bytes per state."""
    clients: int
    """Closed-loop clients."""
    model: str
    """The model served (servebench's name)."""
    runs: int
    """Repeats that measured (no error)."""
    failed: int
    """Repeats that failed."""
    states_per_s: float | None
    """Median over repeats of states answered per second, all clients together."""
    states_per_s_ci_low: float | None
    """95% bootstrap interval of that median (None with fewer than 2 repeats)."""
    states_per_s_ci_high: float | None
    states_per_s_cv: float | None
    """Coefficient of variation over repeats."""
    p50_ms: float | None
    """Median over repeats of the repeat's median latency, milliseconds."""
    p99_ms: float | None
    """Median over repeats of the repeat's 99th percentile latency, milliseconds."""
    overhead_ms: float | None
    """``p50_ms`` less ``inprocess``'s in the same cell."""
    bytes_per_request: int | None
    """Request and answer payload bytes."""
    requests: int
    """Counted requests over all repeats (the percentiles' sample)."""
    short_runs: int
    """Repeats that stopped at ``max_run_s`` before every client had ``min_requests`` answers."""
    cpu_s_per_1000_states: dict[str, float] = field(default_factory=dict)
    """Role -> median CPU-seconds per 1,000 states."""
    error: str | None = None
    """Why repeats failed (the first reason, and how many)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _median(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return float(np.median(got)) if got else None


def cell_key(r: dict[str, Any]) -> tuple[int, int, int]:
    return int(r["batch"]), int(r["input_bytes"]), int(r["clients"])


def summarize_rows(records: list[dict[str, Any]]) -> list[ServeRow]:
    """The rows, in (state size, batch, clients, path) order."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["path"], *cell_key(r)), []).append(r)
    partial = {}
    for key, runs in groups.items():
        ok = [r for r in runs if not r.get("error")]
        bad = [r for r in runs if r.get("error")]
        est = median_ci([r.get("states_per_s") for r in ok])
        roles = sorted({role for r in ok for role in (r.get("cpu_s_per_1000_states") or {})})
        sizes = [int(r["bytes_per_request"]) for r in ok if r.get("bytes_per_request") is not None]
        partial[key] = dict(
            path=key[0],
            batch=key[1],
            input_bytes=key[2],
            clients=key[3],
            model=runs[0].get("model", ""),
            runs=len(ok),
            failed=len(bad),
            states_per_s=est.median,
            states_per_s_ci_low=est.ci_low,
            states_per_s_ci_high=est.ci_high,
            states_per_s_cv=est.cv,
            p50_ms=_median(r.get("p50_ms") for r in ok),
            p99_ms=_median(r.get("p99_ms") for r in ok),
            bytes_per_request=max(sizes) if sizes else None,
            requests=sum(int(r.get("requests") or 0) for r in ok),
            short_runs=sum(bool(r.get("short")) for r in ok),
            cpu_s_per_1000_states={
                role: _median((r.get("cpu_s_per_1000_states") or {}).get(role) for r in ok) for role in roles
            },
            error=(f"{len(bad)} of {len(runs)} repeats failed: {bad[0]['error']}" if bad else None),
        )
    rows = []
    for key, p in partial.items():
        base = partial.get(("inprocess", *key[1:]))
        overhead = (p["p50_ms"] - base["p50_ms"]) if base and None not in (p["p50_ms"], base["p50_ms"]) else None
        rows.append(ServeRow(overhead_ms=overhead, **p))
    order = {p: i for i, p in enumerate(PATHS)}
    rows.sort(key=lambda r: (r.input_bytes, r.batch, r.clients, order.get(r.path, len(order))))
    return rows


@dataclass(frozen=True)
class PathComparison:
    """One path against a reference path in one cell: the cell, and the one rule's :class:`Change` of their
    repeats' states/s (``reference`` is A, ``path`` is B), with its sentence."""

    path: str
    reference: str
    batch: int
    input_bytes: int
    clients: int
    change: Change
    """B/A of median states/s by the one rule, unpaired (:func:`rlbench.analysis.change.unpaired`)."""

    @property
    def verdict(self) -> str:
        """In words, with the evidence (:func:`rlbench.analysis.evidence.change_sentence`, as compare's)."""
        return change_sentence(self.reference, self.path, self.change)


def compare_paths(
    records: list[dict[str, Any]], pairs: tuple[tuple[str, str], ...] = COMPARISONS
) -> list[PathComparison]:
    """Every pair of :data:`COMPARISONS` in every cell where both paths measured."""
    by: dict[tuple, list[float]] = {}
    for r in records:
        if not r.get("error") and r.get("states_per_s") is not None:
            by.setdefault((r["path"], *cell_key(r)), []).append(float(r["states_per_s"]))
    cells = sorted({cell_key(r) for r in records}, key=lambda c: (c[1], c[0], c[2]))
    out = []
    for cell in cells:
        for path, reference in pairs:
            a, b = by.get((reference, *cell)), by.get((path, *cell))
            if a and b:
                out.append(PathComparison(path, reference, *cell, unpaired(a, b)))
    return out


def gap_change(
    records: list[dict[str, Any]], path: str, reference: str, batch: int, clients: int, sizes: tuple[int, int]
) -> Change | None:
    """Whether ``path``'s lead over ``reference`` differs between two state sizes (the small one is A): per
    repeat, ``path``'s states/s over ``reference``'s in the same run (the paths of a repeat ran back to back), the
    two sizes' ratios compared by the one rule, unpaired; None when a size has no repeat with both."""
    rate = {
        (r["path"], r["input_bytes"], r["repeat"]): float(r["states_per_s"])
        for r in records
        if not r.get("error") and r.get("states_per_s") and r["batch"] == batch and r["clients"] == clients
    }
    ratios = [
        [
            rate[(path, size, k)] / rate[(reference, size, k)]
            for (p, s_, k) in rate
            if p == path and s_ == size and (reference, size, k) in rate
        ]
        for size in sizes
    ]
    small, large = ratios
    return unpaired(small, large) if small and large else None


def paper_rows(rows: list[ServeRow], clients: int = 1) -> list[dict[str, Any]]:
    """The paper's Table 3 beside this machine's figures at batch 64 and ``clients`` clients: per workload, the
    paper's Clipper and Ray states/s and their ratio, and here rest_json, actor, their ratio and every other
    path's states/s."""
    here = {(r.path, r.input_bytes): r for r in rows if r.batch == PAPER_BATCH and r.clients == clients}
    out = []
    for p in PAPER_TABLE3["rows"]:
        size = int(p["input_bytes"])
        rest, actor = here.get(("rest_json", size)), here.get(("actor", size))
        ratio = (
            actor.states_per_s / rest.states_per_s
            if rest and actor and rest.states_per_s and actor.states_per_s
            else None
        )
        out.append(
            {
                "workload": p["workload"],
                "input_bytes": size,
                "model": MODELS[size].name,
                "paper_clipper": p["clipper_states_per_s"],
                "paper_ray": p["ray_states_per_s"],
                "paper_ratio": p["ray_states_per_s"] / p["clipper_states_per_s"],
                "rest_json": rest.states_per_s if rest else None,
                "actor": actor.states_per_s if actor else None,
                "ratio": ratio,
                "paths": {r.path: r.states_per_s for (path, s), r in here.items() if s == size},
            }
        )
    return out
