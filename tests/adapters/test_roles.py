"""The one role classifier (rlbench.adapters.roles): each rule on command lines read from real processes."""

from __future__ import annotations

from rlbench.adapters.roles import Role, RoleRules, classify

PY = "/venv/bin/python"
RAY = "/venv/lib/python3.11/site-packages/ray"
#: A framework's actors beside a Ray runtime, and a server by its module.
RULES = RoleRules(titles=(("ray::Learner", "learner"),), markers=(("myapp.serve", "server"),), ray=True)


def test_the_roles_in_order_driver_first_other_last():
    assert RULES.roles == ("driver", "learner", "server", "ray_system", "other")
    assert RoleRules(titles=()).roles == ("driver", "other")  # no runtime: no ray_system


def test_titles_and_markers_name_the_frameworks_processes():
    assert classify(["ray::Learner.update   "], is_driver=False, rules=RULES) == Role("learner")
    assert classify([PY, "-m", "myapp.serve", "--fd", "5"], is_driver=False, rules=RULES) == Role("server")
    assert classify(["ray::Learner"], is_driver=True, rules=RULES) == Role("driver")  # the trial process, whatever


def test_a_ray_worker_that_is_no_actor_yet_is_rays_until_it_settles():
    """Read from an APPO trial under load (issue 44): the raylet started two workers beside its actors', each
    ``default_worker.py``, then ``ray::IDLE``, then gone, never an actor: 35 rows each had been ``other``."""
    starting = classify(
        [PY, f"{RAY}/_private/workers/default_worker.py", "--node-ip-address=127.0.0.1"], is_driver=False, rules=RULES
    )
    idle = classify(["ray::IDLE"], is_driver=False, rules=RULES)
    assert (starting.name, starting.settled, starting.why) == (
        "ray_system",
        False,
        "a Ray worker that is no actor yet (starting, not yet titled)",
    )
    assert (idle.name, idle.settled, idle.why) == (
        "ray_system",
        False,
        "a Ray worker that is no actor yet (pooled, titled ray::IDLE)",
    )


def test_rays_own_processes_are_ray_system_for_good():
    for cmdline in (
        [f"{RAY}/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/ray/sockets/raylet"],
        [f"{RAY}/core/src/ray/gcs/gcs_server", "--log_dir=/tmp/ray/logs"],
        [PY, "-u", f"{RAY}/_private/log_monitor.py"],
        ["ray::DashboardAgent"],
        ["ray::RuntimeEnvAgent"],
    ):
        assert classify(cmdline, is_driver=False, rules=RULES) == Role("ray_system"), cmdline
    assert classify([PY, f"{RAY}/scripts/something.py"], is_driver=False, rules=RULES) == Role(
        "ray_system", "a script under Ray's package"
    )


def test_anything_else_is_other_with_why_and_read_again():
    assert classify(["/bin/sh", "-c", "sleep 1"], is_driver=False, rules=RULES) == Role(
        "other", "no rule names it: /bin/sh -c sleep 1", settled=False
    )
    assert classify(["ray::SomeUsersActor"], is_driver=False, rules=RULES) == Role(
        "other", "an actor these rules do not name: ray::SomeUsersActor", settled=False
    )
    assert (
        classify([], is_driver=False, rules=RULES).why == "no rule names it: (no command line: a zombie or a "
        "kernel thread)"
    )
    # without a Ray runtime, Ray's words name nothing
    assert classify(["ray::IDLE"], is_driver=False, rules=RoleRules(titles=())).name == "other"
