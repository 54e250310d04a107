"""Every test file that runs a sweep or starts Ray says which it is (tests/conftest.py), so the Ray
ones run in their groups, each on one xdist worker of its own."""

from __future__ import annotations

import re

from conftest import NO_RAY_FILES, RAY_FILES, RAY_GROUPS, REPO

#: What running a sweep, a study or a runtime looks like in a test's source.
STARTS_SOMETHING = re.compile(
    r'run_cli\(|run_sweep\(|main\(\["(sweep|history|bisect|autoconfig|simbench)"|ray\.init\(|"ray", "start"'
)


def test_every_file_that_runs_sweeps_is_classified():
    found = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "tests").rglob("test_*.py")
        if p.name != "test_test_groups.py" and STARTS_SOMETHING.search(p.read_text())
    }
    assert found - RAY_FILES - NO_RAY_FILES == set(), "add these to RAY_FILES or NO_RAY_FILES in tests/conftest.py"
    assert not RAY_FILES & NO_RAY_FILES
    groups = list(RAY_GROUPS.values())
    for i, a in enumerate(groups):  # a file in two groups would run in two lines
        assert not any(a & b for b in groups[i + 1 :])
    assert all((REPO / f).exists() for f in RAY_FILES | NO_RAY_FILES)


def test_the_pattern_sees_each_way_a_test_starts_something():
    for source in (
        'run_cli("sweep", spec)',
        'main(["history", str(spec)])',
        "ray.init(address='local')",
        '["ray", "start", "--head"]',
        "outcome = run_sweep(load_spec(spec), out)",
    ):
        assert STARTS_SOMETHING.search(source), source
    assert not STARTS_SOMETHING.search('main(["report", str(folder)])')


def test_under_loadgroup_every_ray_test_is_in_its_ray_group(request):
    """What xdist schedules by: the group in each test's node id (``...::test_x@ray-a``)."""
    if not getattr(request.config.option, "loadgroup", False):
        return  # not under ``--dist loadgroup`` (e.g. ``-n 0``): there is nothing to schedule
    group_of = {f: g for g, files in RAY_GROUPS.items() for f in files}
    for item in request.session.items:
        path = item.nodeid.split("::")[0]
        expected = group_of.get(path, path) if item.get_closest_marker("no_ray") is None else path
        assert item.nodeid.endswith(f"@{expected}"), item.nodeid


def test_a_no_ray_test_of_a_ray_file_goes_with_its_file():
    from conftest import xdist_group_of

    class Item:
        def __init__(self, path, marks):
            self.fspath, self._marks = REPO / path, marks

        def get_closest_marker(self, name):
            return name if name in self._marks else None

    assert xdist_group_of(Item("tests/e2e/test_e2e_sweep.py", [])) == "ray-b"
    assert xdist_group_of(Item("tests/e2e/test_async_e2e.py", [])) == "ray-a"
    assert xdist_group_of(Item("tests/e2e/test_e2e_sweep.py", ["no_ray"])) == "tests/e2e/test_e2e_sweep.py"
    assert xdist_group_of(Item("tests/e2e/test_faults_e2e.py", [])) == "tests/e2e/test_faults_e2e.py"


def test_one_worker_per_ray_group():
    """Fewer workers than groups queue a Ray group behind another (the critical path twice over); more
    leave a worker without a Ray line. pyproject's ``addopts`` is what the README's test command runs."""
    import tomllib

    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    workers = re.search(r"(?:^|\s)-n\s*(\d+)", addopts)
    assert workers and int(workers.group(1)) == len(RAY_GROUPS), addopts


def test_no_two_test_files_share_a_name():
    """pytest imports a test file by its base name (the test folders are not packages): a second file of the same
    name in another folder stops the whole suite with "import file mismatch" (tests/analysis/test_sampling.py beside
    tests/worker/test_sampling.py did)."""
    names: dict[str, list[str]] = {}
    for p in sorted((REPO / "tests").rglob("test_*.py")):
        names.setdefault(p.name, []).append(p.relative_to(REPO).as_posix())
    assert {n: where for n, where in names.items() if len(where) > 1} == {}
