"""Every event a trial's ``events.jsonl`` may hold: its name, who writes it, the fields it carries.

The trial process writes them (``rlbench.worker.events.EventLog``), the sweep appends one
(``profile``), and the sweep, the resume, the tables and the analysis read them back, typed
(:mod:`rlbench.results.events_file`). They all name an event through :class:`Event`, never as a bare
string (tests/test_architecture.py checks), so a renamed or new event is a change here that every
reader sees. What each field means: docs/SCHEMA.md ("Per-trial files").

Every event also has ``event`` (its name) and ``t_s`` (seconds since the trial was launched).
Standard library only: the trial process imports it.
"""

from __future__ import annotations

from enum import Enum


class Event(str, Enum):
    """An event's name, as written in ``events.jsonl``: a ``str``, so it compares equal to what a
    reader parsed and JSON writes it as the plain name."""

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # the plain name in f-strings, as str's

    #: The trial (worker/trial.py), first: ``pid``, ``start_ticks``, ``forked_by_server``.
    START = "start"
    #: The trial's runtime (worker/runtime.py), once Ray is up: ``ray_init_s``, ``session_dir``, ``ray_agents``
    #: (minimal, full or unknown: worker/runtime.minimal_agents); on a cluster also ``ray_address`` and ``job_id``
    #: (worker/cluster_trial.py). None without a runtime.
    RAY_INIT = "ray_init"
    #: The trial, launched early, once the sweep opened its gate: ``waited_s``.
    GATE = "gate"
    #: The trial: ``versions`` (package -> version it imported), ``pins`` (its variant's pins).
    VERSIONS = "versions"
    #: A ``--parallel`` trial (worker/node_set.py), once its placement group on its nodes was placed or not:
    #: ``placed``, ``placement_s``, ``node_ids``, ``bundles`` (the node of each bundle, the driver's first).
    PLACEMENT = "placement"
    #: A ``--parallel`` trial, once its trial actor (the driver) is up: ``node_id``, ``pid``, ``start_ticks``,
    #: ``hostname``.
    TRIAL_ACTOR = "trial_actor"
    #: A ``--parallel`` trial, when one of its nodes died: ``node_ids`` (the dead ones), ``error`` (what the
    #: driver saw, or null when a node was gone before the trial placed its group).
    NODE_LOST = "node_lost"
    #: The trial, when its trainer cannot run the config: ``reason``.
    SKIPPED = "skipped"
    #: The trial, after the build: ``build_s``, ``torch_threads``, ``thread_pools``, ``affinity``,
    #: ``niceness`` and the trainer's facts (``env_runner_pids``, ``weight_params``, ``log_dir``, ...).
    BUILD = "build"
    #: The trial, per training iteration: ``iteration``, ``warmup``, ``t_start_s``, ``t_end_s``,
    #: ``wall_s``, ``other_s``, ``env_steps_per_s``, ``target_value``, ``busy_overlap_s`` and the
    #: trainer's ``IterationTimings`` (every iterations.parquet column; ``runners``).
    ITERATION = "iteration"
    #: A warm trial (``windows`` in its plan), when measured window ``window`` ended: ``window``, ``iterations``
    #: (its steady ones), ``wall_s`` (their walls summed), ``waited_s`` (idle before its gate opened).
    WINDOW_END = "window_end"
    #: The trial, when an iteration reached the stop target: ``iteration``, ``metric``, ``value``,
    #: ``threshold``, ``mode``.
    TARGET_REACHED = "target_reached"
    #: The trial, when training ended normally (the sweep may launch the next trial): no fields.
    TRAINED = "trained"
    #: The trial's cluster steps (worker/cluster_trial.py), before the algorithm stops: ``job_id``,
    #: ``start_s``, ``collect_s``, ``nodes``, ``processes``, ``rows``.
    NODE_SAMPLING = "node_sampling"
    #: The trial's cluster steps, when node sampling failed to start or finish: ``error``.
    NODE_SAMPLING_ERROR = "node_sampling_error"
    #: The trial, after stopping the trainer and its runtime: ``shutdown_s``.
    SHUTDOWN = "shutdown"
    #: The trial's cluster steps, after its driver left: ``job_id``, ``actors_left``,
    #: ``processes_killed``, ``processes_unchecked``, ``waited_s``; or ``actors_left`` null and ``error``.
    CLUSTER_RELEASE = "cluster_release"
    #: The trial, stopped by the sweep's Ctrl-C: no fields.
    INTERRUPTED = "interrupted"
    #: The trial, on any other exception: ``error``, ``traceback``.
    ERROR = "error"
    #: The trial, last: ``status`` (``ok``, ``skipped``, ``interrupted``, ``failed``).
    END = "end"
    #: The sweep (measure/profiler.py), after the trial, with ``profile_hz``: ``status``, ``note``,
    #: ``hz``, ``native``, ``roles``, ``t_start_s``, ``t_stop_s``, ``cpu_s``, ``processes``.
    PROFILE = "profile"
