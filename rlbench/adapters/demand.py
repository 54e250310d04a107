"""What a trial asks of the machine, and what an iteration trains on, as its adapter answers (standard library only).

:class:`ResourceDemand` is the one place the resource arithmetic lives: the plan's skip reasons, the cluster
planning, the per-role allocation columns, the per-node allocation and autoconfig's candidates all read it
(``Adapter.resource_demand``); :class:`TrainBatch` is ``Adapter.train_batch``'s answer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ActorDemand:
    """One kind of actor a trial starts: how many, and what each one asks of the machine."""

    role: str
    """Its role (``env_runner``, ``learner``)."""
    count: int
    """How many of them."""
    cpus: float
    """CPUs each reserves."""
    gpus: float
    """GPUs each reserves."""
    what: str
    """How to name them to a user, e.g. ``env runners``."""


@dataclass(frozen=True)
class ResourceDemand:
    """What a trial asks of the machine, per role and per actor (the one place this arithmetic lives:
    the plan, the analysis, the per-node tables and the cluster planning all read it)."""

    driver_cpus: int
    """CPUs rlbench reserves for the driver (``num_cpus_for_main_process``)."""
    actors: tuple[ActorDemand, ...] = ()
    """The kinds of actor the trial starts (a kind may have a count of 0)."""
    driver_gpus: float = 0.0
    """GPUs the driver's own learner takes (a learner inside the driver process)."""

    @property
    def actor_cpus(self) -> float:
        """CPUs Ray must find for all actors together."""
        return sum(a.count * a.cpus for a in self.actors)

    @property
    def gpus(self) -> float:
        """GPUs the learners and env runners ask for together."""
        return self.driver_gpus + sum(a.count * a.gpus for a in self.actors)

    @property
    def learner_gpus(self) -> float:
        """GPUs the learners ask for, the driver's own learner included (env runners' GPUs left out)."""
        return self.driver_gpus + sum(a.count * a.gpus for a in self.actors if a.role == "learner")

    @property
    def total_cpus(self) -> float:
        """Driver plus actors."""
        return self.driver_cpus + self.actor_cpus

    @property
    def actor_processes(self) -> int:
        """Actors the trial asks Ray for, each a worker process of its own (RLlib's 0-CPU helpers, such as APPO's
        env runner state server, are not in :attr:`actors` and not counted)."""
        return sum(a.count for a in self.actors)

    @property
    def largest_actor_cpus(self) -> float:
        """The most CPUs any one actor reserves (an actor cannot span machines); 0 without actors."""
        return max((a.cpus for a in self.actors if a.count), default=0.0)

    def role_cpus(self, roles: tuple[str, ...]) -> dict[str, float]:
        """CPUs allocated per role (every role in ``roles``; 0 where the trial allocates none)."""
        out = {role: 0.0 for role in roles}
        out["driver"] = float(self.driver_cpus)
        for a in self.actors:
            out[a.role] = out.get(a.role, 0.0) + a.count * a.cpus
        return out

    def cpus_per_actor(self) -> dict[str, float]:
        """Role -> CPUs one actor of that role reserves."""
        return {a.role: a.cpus for a in self.actors}

    def describe_actors(self) -> str:
        """``2 env runners x 1 CPU + 1 learners x 1 CPU``, for messages."""
        return " + ".join(f"{a.count} {a.what} x {a.cpus:g} CPU" for a in self.actors)


@dataclass(frozen=True)
class TrainBatch:
    """The env steps one training iteration trains on, by the framework's rules (its default where the spec
    sets no ``train_batch_size_per_learner``): what ``rlbench autoconfig``'s cost model and the trials table read."""

    per_learner: int
    """Env steps each learner trains on per iteration."""
    learners: int
    """Learners that train in parallel, each on ``per_learner`` steps (a learner inside the driver counts as one)."""

    @property
    def env_steps(self) -> int:
        """Env steps per iteration, all learners together."""
        return self.per_learner * self.learners
