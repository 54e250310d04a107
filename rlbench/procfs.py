"""Linux /proc parsing shared by the local sampler and the cluster node samplers (standard library only,
so it imports inside Ray workers)."""

from __future__ import annotations


def parse_cpu_times(text: bytes) -> dict[int, tuple[int, int]]:
    """Core id -> (busy, total) clock ticks from ``/proc/stat``, busy as psutil defines it.

    Total leaves out guest and guest_nice (already counted in user and nice); busy is total less
    idle and iowait.
    """
    out = {}
    for line in text.splitlines():
        if not line.startswith(b"cpu") or line.startswith(b"cpu "):
            continue
        name, *fields = line.split()
        v = [int(x) for x in fields] + [0] * 8
        total = sum(v[:8])  # user nice system idle iowait irq softirq steal
        out[int(name[3:])] = (total - v[3] - v[4], total)
    return out
