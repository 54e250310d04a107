"""The outside sampler: /proc parsing (hand-made lines) and a real, Ray-free process tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import psutil
import pytest

from rlbench.measure import utilization as sample
from rlbench.measure.utilization import UtilizationSampler as Sampler
from rlbench.measure.utilization import parse_forks
from rlbench.worker.procfs import parse_cpu_times, parse_stat

# A stat line whose command name holds a space and a parenthesis, as a process title can.
STAT = (
    b"4242 (ray::IDLE) x) S 4200 4242 4242 0 -1 4194560 1000 0 0 0 "
    b"250 50 0 0 20 0 30 0 123456 900000000 2048 18446744073709551615"
)


def test_parse_stat_takes_fields_after_the_last_parenthesis():
    stat = parse_stat(STAT)
    assert stat.state == "S"
    assert stat.ppid == 4200
    assert stat.cpu_s == pytest.approx(300 / os.sysconf("SC_CLK_TCK"))  # utime 250 + stime 50 ticks
    assert stat.start_ticks == 123456
    assert stat.rss_bytes == 2048 * os.sysconf("SC_PAGE_SIZE")


def test_parse_stat_marks_a_dying_process():
    assert not parse_stat(STAT).exiting  # flags 4194560 = 0x400100: PF_EXITING (0x4) not set
    exiting = STAT.replace(b" 4194560 ", b" 4194564 ")  # the same process after exit() began
    assert parse_stat(exiting).exiting
    assert parse_stat(STAT.replace(b") S ", b") Z ")).exiting  # a zombie


def test_a_dying_process_yields_no_row(tree, monkeypatch):
    """A process caught while exiting reads 0 resident bytes (its memory is already released); it
    must give no row rather than a zero that drags the role's memory and CPU means down."""
    root = tree(1)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    real = sample.parse_stat
    try:
        s.sample_once()
        child = next(p for p in s._members if p != root.pid)
        s.sample_once()
        before = len(s._rows.process_rows)
        assert {row[3] for row in s._rows.process_rows} == {root.pid, child}

        def dying(text):
            stat = real(text)
            if stat.ppid == root.pid:  # the child: exit has begun, memory gone, flag set
                stat.rss_bytes, stat.exiting = 0, True
            return stat

        monkeypatch.setattr(sample, "parse_stat", dying)
        s.sample_once()
        assert [row[3] for row in s._rows.process_rows[before:]] == [root.pid]

        def zero_rss(text):  # an older kernel may not show the flag yet: 0 resident bytes says it too
            stat = real(text)
            if stat.ppid == root.pid:
                stat.rss_bytes = 0
            return stat

        monkeypatch.setattr(sample, "parse_stat", zero_rss)
        before = len(s._rows.process_rows)
        s.sample_once()
        assert [row[3] for row in s._rows.process_rows[before:]] == [root.pid]
    finally:
        s.close()


def test_parse_cpu_times_busy_excludes_idle_and_iowait_and_guest():
    text = (
        b"cpu  10 0 10 70 10 0 0 0 0 0\n"
        b"cpu0 5 1 4 30 10 0 0 0 3 0\n"  # guest 3 is already inside user: not added again
        b"cpu3 1 0 1 8 0 0 0 0\n"  # older kernels: fewer fields; ids may skip
        b"intr 12345\n"
    )
    assert parse_cpu_times(text) == {0: (10, 50), 3: (2, 10)}


def _tree(n_sleepers: int, busy: bool) -> subprocess.Popen:
    """A parent with n sleeping children and, optionally, one child spinning a core."""
    code = (
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen(['sleep', '30']) for _ in range({n_sleepers})]\n"
        + ("kids.append(subprocess.Popen([sys.executable, '-c', 'while True: pass']))\n" if busy else "")
        + "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "ready"
    # A child just past fork/exec can read 0 resident bytes for a moment (seen for `sleep`, state R,
    # no CPU used yet), which the sampler rightly records no row for: wait until every child holds memory.
    deadline = time.monotonic() + 30
    while any(_rss(kid) == 0 for kid in _children(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return parse_stat(f.read()).rss_bytes
    except OSError:
        return 0


@pytest.fixture
def tree():
    procs = []

    def make(n_sleepers: int, busy: bool = False) -> subprocess.Popen:
        procs.append(_tree(n_sleepers, busy))
        return procs[-1]

    yield make
    for p in procs:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_sampler_follows_the_tree_and_measures_a_busy_child(tree):
    root = tree(3, busy=True)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    try:
        s._baseline()
        for _ in range(6):
            s.sample_once()
            time.sleep(0.1)
        assert len({pid for pid, _ in s.seen_processes}) == 5  # root, 3 sleepers, the spinner
        cols = s.columns
        rows = [(pid, pct) for kind, pid, pct in zip(cols["kind"], cols["pid"], cols["cpu_pct"]) if kind == "process"]
        by_pid: dict[int, list[float]] = {}
        for pid, pct in rows:
            by_pid.setdefault(pid, []).append(pct)
        spinner = max(by_pid, key=lambda pid: sum(by_pid[pid]))
        mean_spin = sum(by_pid[spinner]) / len(by_pid[spinner])
        # one core when the machine is quiet; on a loaded machine its fair share, still far above the sleepers
        assert mean_spin > 20
        sleepers = [pid for pid in by_pid if pid not in (spinner, root.pid)]
        assert all(sum(by_pid[p]) / len(by_pid[p]) < mean_spin / 10 for p in sleepers)
        roles = {pid: role for kind, pid, role in zip(cols["kind"], cols["pid"], cols["role"]) if kind == "process"}
        assert roles[root.pid] == "driver" and roles[spinner] == "other"
        cores = [c for kind, c in zip(cols["kind"], cols["core"]) if kind == "core"]
        assert set(cores) == set(parse_cpu_times(open("/proc/stat", "rb").read()))
        assert all(0 <= v <= 100 for kind, v in zip(cols["kind"], cols["cpu_pct"]) if kind == "core")
    finally:
        s.close()


def test_sampler_keeps_outsiders_out_and_records_no_row_for_a_dead_child(tree):
    root = tree(1)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    try:
        s.sample_once()
        assert root.pid in s._members and len(s._members) == 2
        # a grandchild appears: a child of a process outside the tree must stay outside
        outsider = subprocess.Popen(["sleep", "30"])
        child = next(p for p in s._members if p != root.pid)
        s.sample_once()
        assert outsider.pid not in s._members and outsider.pid in s._foreign
        os.kill(child, signal.SIGKILL)
        time.sleep(0.2)  # the parent's Popen never reaps it: it stays a zombie, which records no row
        s.sample_once()
        n_rows = len(s._rows.process_rows)
        s.sample_once()
        assert all(row[3] != child for row in s._rows.process_rows[n_rows:])
        outsider.kill()
        outsider.wait()
    finally:
        s.close()


def test_sampler_reclassifies_other_processes_only_every_few_ticks(tree, monkeypatch):
    root = tree(1)
    reads: list[int] = []
    real = sample.read_cmdline

    def counting(pid):
        reads.append(pid)
        return real(pid)

    monkeypatch.setattr(sample, "read_cmdline", counting)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    try:
        for _ in range(1 + 2 * sample.RECLASSIFY_EVERY):
            s.sample_once()
        child = next(p for p in s._members if p != root.pid)
        # driver: classified once; its child's first reading also compares it with this parent's, once
        assert reads.count(root.pid) == 2
        assert 2 <= reads.count(child) <= 3  # other: once, then every RECLASSIFY_EVERY ticks
    finally:
        s.close()


def test_an_adopted_process_stays_harness_however_often_others_are_read_again(tree):
    """py-spy, adopted beside the trial: ``harness`` for good, never read again as a title (its command line names
    no role, so a re-read would have made it ``other``; tests/e2e/test_profiles_e2e.py caught that, issue 44)."""
    root, outsider = tree(0), tree(0)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    try:
        s.adopt(outsider.pid)
        for _ in range(1 + 2 * sample.RECLASSIFY_EVERY):
            s.sample_once()
        assert (s._members[outsider.pid].role, s._members[outsider.pid].settled) == ("harness", True)
        roles = {r for pid, r in zip(s.columns["pid"], s.columns["role"]) if pid == outsider.pid}
        assert roles == {"harness"}
    finally:
        s.close()


def test_sampler_off_takes_no_samples(tree):
    root = tree(0)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=0).start()
    time.sleep(0.2)
    s.stop()
    assert s.samples == 0 and s.cpu_s == 0.0 and s.columns["t_s"] == []


def test_parse_forks_reads_the_processes_line():
    assert parse_forks(b"cpu  1 2 3 4\nctxt 99\nbtime 5\nprocesses 34710\nprocs_running 2\n") == 34710
    assert parse_forks(b"cpu  1 2 3 4\nprocesses 7") == 7
    assert parse_forks(b"cpu  1 2 3 4\n") is None


def test_sampler_skips_the_proc_listing_when_nothing_forked(tree, monkeypatch):
    root = tree(1)
    s = Sampler(root.pid, t0_epoch=time.time(), hz=10)
    listings = []
    real = os.listdir
    monkeypatch.setattr(sample.os, "listdir", lambda path: listings.append(path) or real(path))
    forks = iter([100, 100, 100, 101, 101])
    monkeypatch.setattr(sample, "parse_forks", lambda text: next(forks))
    try:
        for _ in range(5):
            s.sample_once()
        assert len(listings) == 2  # the first tick, and the tick after the fork counter moved
        assert len(s._members) == 2
    finally:
        s.close()


@contextmanager
def _sampled(code: str):
    """A Python process running ``code`` in a session of its own (stdin and stdout piped, text) and a 10 Hz sampler of
    its tree; both ended after, the whole session killed."""
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    s = Sampler(parent.pid, t0_epoch=time.time(), hz=10)
    try:
        yield parent, s
    finally:
        s.close()
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def _titled_child(title, says):
    """A child script that takes a Ray worker's ``title``, prints ``says`` and waits for a line on stdin."""
    return (
        "import sys\n"
        "from ray._raylet import setproctitle\n"
        f"setproctitle({title!r})\n"
        f"print({says!r}, flush=True)\n"
        "sys.stdin.readline()\n"
    )


def _roles_of(s, pid: int) -> list[str]:
    return [r for p, r in zip(s.columns["pid"], s.columns["role"]) if p == pid]


def test_idle_worker_that_becomes_an_env_runner_is_reclassified():
    """Ray pools ``ray::IDLE`` workers and later turns one into an actor: its title changes."""
    code = (
        "import sys\n"
        "from ray._raylet import setproctitle\n"
        "setproctitle('ray::IDLE')\n"
        "print('idle', flush=True)\n"
        "sys.stdin.readline()\n"
        "setproctitle('ray::SingleAgentEnvRunner.sample')\n"
        "print('actor', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    parent_code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {code!r}], stdin=sys.stdin, stdout=sys.stdout)\n"
        "child.wait()\n"
    )
    with _sampled(parent_code) as (parent, s):
        assert parent.stdout.readline().strip() == "idle"
        for _ in range(2):
            s.sample_once()
        child = next(p for p in s._members if p != parent.pid)
        assert (s._members[child].role, s._members[child].settled) == ("ray_system", False)  # Ray's, for now
        parent.stdin.write("\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "actor"
        for _ in range(sample.RECLASSIFY_EVERY + 1):
            s.sample_once()
        assert s._members[child].role == "env_runner"
        roles = _roles_of(s, child)
        # the rows read while it was still ray::IDLE are the actor's own start: relabelled, none left Ray's
        assert len(roles) >= 3 and set(roles) == {"env_runner"}


def test_a_worker_read_as_a_zombie_keeps_its_role_and_its_rows():
    """A process that has exited but is not yet reaped reads an empty command line: the Ray worker it was stays
    Ray's, and its rows are not relabelled ``other`` (the async e2e's idle prestarted worker: 77 rows of its import
    read ``other`` in a fresh clone, 2026-11-30)."""
    worker = _titled_child("ray::IDLE", "idle")
    # the parent never reaps it: once it exits it stays a zombie until the parent is killed
    parent_code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', {worker!r}])\n"
        "time.sleep(3600)\n"
    )
    with _sampled(parent_code) as (parent, s):
        assert parent.stdout.readline().strip() == "idle"
        for _ in range(3):  # rows of its life: the first look admits it, each later one reads its CPU
            s.sample_once()
        child = next(p for p in s._members if p != parent.pid)
        assert (s._members[child].role, s._members[child].settled) == ("ray_system", False)
        parent.stdin.write("\n")
        parent.stdin.flush()
        while psutil.Process(child).status() != psutil.STATUS_ZOMBIE:  # ends at its exit: no clock in the verdict
            time.sleep(0.01)
        assert sample.read_cmdline(child) == []  # what a zombie shows
        for _ in range(sample.RECLASSIFY_EVERY + 1):
            s.sample_once()
        assert s._members[child].role == "ray_system"
        roles = _roles_of(s, child)
        assert len(roles) >= 2 and set(roles) == {"ray_system"}


def test_a_child_read_before_its_exec_takes_its_own_role_after_it():
    """Between fork and exec a child shows its parent's command line: the raylet's child that
    would become APPO's state server read as ``ray_system`` for good under load."""
    actor = _titled_child("ray::EnvRunnerStateServer", "actor")
    # the parent's command line names the raylet, as the raylet's own does: its copy reads ray_system
    parent_code = (
        "# raylet\n"
        "import os, sys\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('forked', flush=True)\n"
        "    sys.stdin.readline()\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', {actor!r}])\n"
        "os.waitpid(pid, 0)\n"
    )
    with _sampled(parent_code) as (parent, s):
        assert parent.stdout.readline().strip() == "forked"
        for _ in range(2):
            s.sample_once()
        child = next(p for p in s._members if p != parent.pid)
        assert s._members[child].role == "ray_system" and s._members[child].unexeced
        parent.stdin.write("\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "actor"
        for _ in range(sample.RECLASSIFY_EVERY + 1):
            s.sample_once()
        assert s._members[child].role == "state_server" and not s._members[child].unexeced
        roles = _roles_of(s, child)
        # the rows read before the exec are the actor's process too: relabelled
        assert len(roles) >= 3 and set(roles) == {"state_server"}
