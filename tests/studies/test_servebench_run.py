"""servebench's run without a Ray runtime: a run's figures from its clients' results, a path whose server did not
start (its rows say why, nothing is sent), a REST server that dies before it answers, and a stop with nothing
started."""

from __future__ import annotations

import pytest

from rlbench.studies.serve_rest import RestServer
from rlbench.studies.servebench import ServebenchConfig, Slot
from rlbench.studies.servebench_run import ServebenchRun, short_error, summarize


class NoProbe:
    def start(self):
        raise AssertionError("nothing may be measured")

    def stop(self):
        raise AssertionError("nothing may be measured")


def test_a_runs_figures_sum_the_clients_rates_and_pool_their_latencies():
    results = [
        {
            "states_per_s": 1000.0,
            "requests": 4,
            "states": 256,
            "short": False,
            "latencies_ms": [1.0, 2.0, 3.0, 4.0],
            "bytes_per_request": 1536,
            "actions_digest": "ab",
        },
        {
            "states_per_s": 500.0,
            "requests": 2,
            "states": 128,
            "short": True,
            "latencies_ms": [5.0, 6.0],
            "bytes_per_request": 1536,
            "actions_digest": "ab",
        },
    ]
    got = summarize(results, {"client": 0.384, "server": 0.768}, window_s=0.5)
    assert got["states_per_s"] == 1500.0 and got["requests"] == 6 and got["states"] == 384 and got["short"]
    assert got["p50_ms"] == 3.5 and got["p99_ms"] == pytest.approx(5.95) and got["mean_ms"] == 3.5
    assert got["cpu_s_per_1000_states"] == {"client": pytest.approx(1.0), "server": pytest.approx(2.0)}
    assert summarize([{**results[0], "states_per_s": None}], {}, 0.5)["states_per_s"] is None


def test_a_path_whose_server_did_not_start_says_why_and_sends_nothing(tmp_path):
    run = ServebenchRun(ServebenchConfig(paths=("serve_bytes", "inprocess")), tmp_path, NoProbe())
    run.server_errors["serve"] = "RuntimeError: port taken"
    record = run._run_slot(Slot(0, 0, "serve_bytes", 64, 16, 1))
    assert record["error"] == "the serve server did not start: RuntimeError: port taken"
    assert record["path"] == "serve_bytes" and "states_per_s" not in record
    assert run.close() == [] and run.close() == []  # nothing was started: nothing to stop, twice


def test_a_rest_server_that_dies_before_answering_is_a_reason_not_a_hang(tmp_path):
    server = RestServer({"cartpole": str(tmp_path / "no-such-checkpoint")}, tmp_path / "rest.log")
    with pytest.raises(RuntimeError, match="exited with 1 before answering") as e:
        server.start(timeout_s=120)
    assert str(tmp_path / "rest.log") in short_error(e.value)
    assert (tmp_path / "rest.log").stat().st_size > 0  # its own traceback is kept there
    server.stop()
