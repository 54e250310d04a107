"""The hypervisor's steal from /proc/stat, on hand-computed readings."""

from rlbench.worker.procfs import parse_steal, steal_pct

#: user nice system idle iowait irq softirq steal guest guest_nice: total 1000 ticks, steal 62
BEFORE = b"cpu  100 5 20 800 10 1 2 62 7 0\ncpu0 50 2 10 400 5 0 1 31 0 0\nintr 1 2\n"
#: 1000 ticks later, 240 of them stolen (guest is counted in user already and stays out of total)
AFTER = b"cpu  150 5 30 1500 10 1 2 302 9 0\ncpu0 75 2 15 750 5 0 1 151 0 0\n"


def test_steal_is_read_from_the_all_cores_line():
    assert parse_steal(BEFORE) == (62, 1000)
    assert parse_steal(AFTER) == (302, 2000)
    assert parse_steal(b"cpu0 1 2 3 4\n") is None  # no all-cores line


def test_steal_pct_is_the_share_of_all_cores_time_between_two_readings():
    assert steal_pct(parse_steal(BEFORE), parse_steal(AFTER)) == 24.0
    # a kernel too old for the steal field: none stolen, not an error
    assert steal_pct(parse_steal(b"cpu  1 0 1 8\n"), parse_steal(b"cpu  2 0 2 16\n")) == 0.0
    # nothing to divide by, or a reading missing: no figure rather than a guess
    assert steal_pct((5, 100), (5, 100)) is None
    assert steal_pct(None, (5, 100)) is None and steal_pct((5, 100), None) is None
