"""A driver's BLAS and OpenMP thread pools: limited as Tune's trial actor has them, and read back for the build
event. Used by the trial process and by a ``--parallel`` trial's actor on its node (standard library at module
level; threadpoolctl inside the functions)."""

from __future__ import annotations


def limit_thread_pools(n: int) -> None:
    """Every BLAS and OpenMP pool in the driver to ``n`` threads, as Tune's trial actor has them: Ray
    exports OMP_NUM_THREADS=n to the actor before anything loads. The fork server loaded numpy's
    OpenBLAS with no such variable, so it has a thread per core; torch's own threads alone were set.
    With that second BLAS thread, PPO ran 8% slower under rlbench than under Tune on 2 cores
    (0.914-0.987 paired, 6 rounds; docs/MEASUREMENT.md 7)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)


def thread_pools() -> dict[str, int]:
    """The driver's BLAS and OpenMP pools as they are (library -> threads), for the build event."""
    from threadpoolctl import threadpool_info

    return {f"{p['internal_api']}:{p['prefix']}": p["num_threads"] for p in threadpool_info()}
