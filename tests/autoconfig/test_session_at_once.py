"""autoconfig's session with a runner that runs several trials at once (``--parallel``), on simulated trials:
it hands the runner a batch ``width`` at a time, still answers within its budget, and spends less wall time
than one at a time."""

from __future__ import annotations

from dataclasses import dataclass, field

from simulated import SimRunner, session, world


@dataclass
class AtOnce(SimRunner):
    """Runs a group at once on the simulated clock: the group costs its longest trial."""

    width: int = 2
    groups: list[list[str]] = field(default_factory=list)

    def run_many(self, requests):
        self.groups.append([r.request_id for r in requests])
        start, results, longest = self.clock_s, [], 0.0
        for request in requests:
            self.clock_s = start
            results.append(self.run(request))
            longest = max(longest, self.clock_s - start)
        self.clock_s = start + longest
        return results


def test_batches_go_to_the_runner_width_at_a_time_within_the_budget():
    faster = 0
    for seed in range(20):
        w = world(seed)
        budget = 1.0 * w.exhaustive_s(2)
        one = SimRunner(w)
        s = session(w, budget)
        if s.minimum_budget_s() > budget:
            continue
        first = s.run(one)
        two = AtOnce(w)
        second = session(w, budget).run(two)
        assert two.groups and max(len(g) for g in two.groups) <= 2
        assert sum(len(g) for g in two.groups) == len(two.results)  # every trial went through run_many
        assert two.clock_s <= budget * 1.1, (seed, two.clock_s, budget)
        assert (first.chosen_key is None) == (second.chosen_key is None)
        faster += two.clock_s < one.clock_s
    assert faster >= 15  # two at a time: less wall time on nearly every world
