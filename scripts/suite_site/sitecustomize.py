"""Logs every ``rlbench`` command a test suite runs: put this folder on PYTHONPATH with ``RLBENCH_CLI_LOG`` set.

One tab-separated line a command as it exits: its start (epoch s), wall s, its own CPU s, its reaped children's CPU s
(the fork server, the trials, their Ray runtimes as far as they were reaped) and its arguments. Read by
``scripts/suite_accounting.py``. Python imports ``sitecustomize`` in every interpreter it starts; any other process
returns at once.
"""

import os

_LOG = os.environ.get("RLBENCH_CLI_LOG")


def _install(log: str) -> None:
    import atexit
    import resource
    import time

    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return
    if "rlbench" not in argv[1:3] and not any(a.endswith("/bin/rlbench") for a in argv[:2]):
        return
    start, pid = time.time(), os.getpid()

    def done() -> None:
        if os.getpid() != pid:  # a forked child inherits the hook: only the command itself writes
            return
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        args = " ".join(argv[1:7]).replace("\t", " ").replace("\n", " ")
        line = (
            f"{start:.1f}\t{time.time() - start:.2f}\t{own.ru_utime + own.ru_stime:.2f}\t"
            f"{kids.ru_utime + kids.ru_stime:.2f}\t{args}\n"
        )
        with open(log, "a") as f:
            f.write(line)

    atexit.register(done)


if _LOG:
    _install(_LOG)
