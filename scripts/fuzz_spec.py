"""Fuzz the spec validation: mutate valid specs and check rlbench answers 0 or 2, never a traceback,
and writes nothing when it answers 2.

Each case starts from one of a few valid specs, mutates its data (keys added, renamed to old
names, deleted; values of every type and size, ``.inf``/``.nan``, huge and tiny numbers, markup and
escape sequences, deep nesting, big grids and repeats) and then often its YAML text (anchors and
aliases up to a billion laughs, tags: ``!!python/object/apply`` aimed at a marker file,
``!!binary``, ``!!set``, timestamps, unknown tags; merge keys, duplicate keys, several
documents, truncation, odd characters, deep brackets). Per case, in-process
(``rlbench.commands.main``, no subprocess):

- ``rlbench sweep SPEC --out DIR --dry-run`` must return 0 or 2 and raise nothing;
- on 2, the real ``rlbench sweep SPEC --out DIR`` must return 2 too (validation happens before
  anything runs), and neither may write anything: the case's folder (and its HOME) stay as they
  were, DIR is never created, the marker a ``!!python`` tag would touch never appears.

Usage::

    python scripts/fuzz_spec.py [--examples 2000] [--seed N]

prints how many cases it tried and the outcome counts; exit 1 if any case failed. The test
suite runs the same property on a fixed set of cases (``tests/commands/test_spec_fuzz.py``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import io
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]

#: Valid starting points (each validates and dry-runs with exit 0).
BASES = [
    {"name": "smoke", "environment": {"env": "CartPole-v1"}, "stop": {"iterations": 3}},
    {
        "name": "tiny",
        "environment": {"env": "envs.tiny:TinyEnv", "env_config": {"episode_len": 20}},
        "env_runners": {"num_env_runners": 1, "num_cpus_per_env_runner": 1.0},
        "cpus": 2,
        "training": {"train_batch_size_per_learner": 128, "minibatch_size": 64, "num_epochs": 1, "lr": 0.0003},
        "rl_module": {"fcnet_hiddens": [8, 8]},
        "grid": {"num_env_runners": [0, 1], "env_config.obs_size": [4, 8]},
        "repeats": 2,
        "stop": {"iterations": 3, "seconds": 30.0},
        "warmup_iterations": 1,
        "trial_timeout_s": 120,
        "sample_hz": 10,
        "env_ceiling_s": 0.5,
        "seed": 1,
    },
    {
        "name": "full",
        "environment": {"env": "envs.tiny:TinyEnv"},
        "env_runners": {"num_workers": 1},
        "learners": {"num_gpus": 0},
        "resources": {"num_cpus_for_main_process": 1},
        "threads": {"driver_torch_threads": 1},
        "ray": {"include_dashboard": False},
        "grid": {"training.num_sgd_iter": [1, 2]},
        "stop": {"seconds": 5},
        "trial_memory_limit_bytes": 2**30,
    },
    {
        "name": "target",
        "environment": {"env": "CartPole-v1"},
        "repeats": 2,
        "seed": [3, 4],
        "stop": {"iterations": 20, "episode_return_mean": 150},
    },
]

#: Keys a mutation may add: real ones (in the wrong place too), old names, and odd ones.
KEYS = [
    "name",
    "environment",
    "env",
    "env_config",
    "env_runners",
    "num_env_runners",
    "learners",
    "num_learners",
    "resources",
    "threads",
    "training",
    "lr",
    "lambda",
    "rl_module",
    "fcnet_hiddens",
    "cpus",
    "grid",
    "repeats",
    "stop",
    "iterations",
    "seconds",
    "warmup_iterations",
    "trial_timeout_s",
    "sample_hz",
    "env_ceiling_s",
    "seed",
    "ray",
    "include_dashboard",
    "episode_return_mean",
    "at_most",
    "num_workers",
    "num_gpus",
    "sgd_minibatch_size",
    "env_config.x",
    "training.lr",
    "cpuz",
    "",
    " ",
    "[/]",
    "\x1b[2J",
    "<<",
    "a.b.c",
    "ü",
]

TEXTS = [
    "auto",
    "CartPole-v1",
    "envs.tiny:TinyEnv",
    "subprocess:Popen",
    "os:system",
    "envs.tiny:[/]",
    "relu",
    "PPO",
    "[bold red]x[/]",
    "[/]",
    "\x1b]0;pwned\x07",
    "\u202e",
    "<script>",
    "=1+1",
    "../../etc",
    "session_2026-01-01_00-00-00_000000_1",
    "",
    "x" * 300,
]

FLOATS = [float("inf"), float("-inf"), float("nan"), 1e-300, 1e300, -0.0, 5e-324, 1.7976931348623157e308]
INTS = [0, -1, 1, 2, 2**31, 2**63, 2**64, 10**30, -(10**30)]


def _scalars():
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.sampled_from(INTS),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(FLOATS),
        st.text(max_size=30),
        st.sampled_from(TEXTS),
    )


def _values():
    return st.recursive(
        _scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=5),
            st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=4),
        ),
        max_leaves=12,
    )


def _containers(node, out: list) -> list:
    """Every dict and list in the tree."""
    if isinstance(node, (dict, list)):
        out.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            _containers(child, out)
    return out


def _set_value(draw, data):
    target = draw(st.sampled_from(_containers(data, [])))
    if isinstance(target, dict) and target:
        target[draw(st.sampled_from(sorted(target, key=str)))] = draw(_values())
    elif isinstance(target, list) and target:
        target[draw(st.integers(0, len(target) - 1))] = draw(_values())
    return data


def _add_key(draw, data):
    dicts = [c for c in _containers(data, []) if isinstance(c, dict)]
    draw(st.sampled_from(dicts))[draw(st.sampled_from(KEYS))] = draw(_values())
    return data


def _delete_key(draw, data):
    dicts = [c for c in _containers(data, []) if isinstance(c, dict) and c]
    if dicts:
        target = draw(st.sampled_from(dicts))
        del target[draw(st.sampled_from(sorted(target, key=str)))]
    return data


def _nest(draw, data):
    target = draw(st.sampled_from([c for c in _containers(data, []) if isinstance(c, dict) and c]))
    key = draw(st.sampled_from(sorted(target, key=str)))
    for _ in range(draw(st.integers(1, 60))):
        target[key] = [target[key]] if draw(st.booleans()) else {"a": target[key]}
    return data


def _grow_grid(draw, data):
    axes = [
        "num_env_runners",
        "env_config.k",
        "env_config.j",
        "cpus",
        "training.lr",
        "num_envs_per_env_runner",
        "env",
        "env_config",
        "rl_module.fcnet_hiddens",
        "nope",
    ]
    grid = data.setdefault("grid", {}) if isinstance(data.get("grid", {}), dict) else {}
    for axis in draw(st.lists(st.sampled_from(axes), min_size=1, max_size=8)):
        grid[axis] = list(range(draw(st.integers(0, 40))))
    data["grid"] = grid
    if draw(st.booleans()):
        data["repeats"] = draw(st.sampled_from([1, 3, 1000, 10**6]))
    return data


def _old_names(draw, data):
    runners = data.setdefault("env_runners", {}) if isinstance(data.get("env_runners", {}), dict) else {}
    runners[draw(st.sampled_from(["num_workers", "num_rollout_workers", "num_envs_per_worker"]))] = draw(
        st.sampled_from([0, 1, 2, -1, "two"])
    )
    data["env_runners"] = runners
    return data


#: Knobs (section, key) and values of the right type at their edges: these mostly pass validation,
#: so planning, skip reasons and the plan table meet them too.
KNOBS = [
    ("env_runners", "num_env_runners"),
    ("env_runners", "num_envs_per_env_runner"),
    ("env_runners", "num_cpus_per_env_runner"),
    ("env_runners", "num_gpus_per_env_runner"),
    ("learners", "num_learners"),
    ("learners", "num_gpus_per_learner"),
    ("learners", "learner_gpus"),
    ("learners", "num_cpus_per_learner"),
    ("resources", "num_cpus_for_main_process"),
    ("threads", "driver_torch_threads"),
    ("training", "train_batch_size_per_learner"),
    ("training", "minibatch_size"),
    ("training", "gamma"),
    (None, "cpus"),
    (None, "warmup_iterations"),
    (None, "sample_hz"),
    (None, "env_ceiling_s"),
    (None, "trial_timeout_s"),
    (None, "seed"),
    ("stop", "iterations"),
    ("stop", "seconds"),
]
EDGE_VALUES = [0, 1, 2, 3, 7, 64, 4096, 10_000, 100_000, 0.5, 0.1, 1e-9, 99.9, 100, 3600, 2**32 - 1, 2**31 - 1]


def _tweak_knob(draw, data):
    section, key = draw(st.sampled_from(KNOBS))
    holder = data if section is None else data.setdefault(section, {})
    if isinstance(holder, dict):
        holder[key] = draw(st.sampled_from(EDGE_VALUES))
    return data


DATA_MUTATIONS = [
    _set_value,
    _add_key,
    _delete_key,
    _nest,
    _grow_grid,
    _old_names,
    _tweak_knob,
    _tweak_knob,
    _tweak_knob,
]

LAUGHS = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9))


def _yaml_feature(draw, text: str, marker: Path) -> str:
    """Append or splice one YAML feature into the text."""
    features = [
        f"seed: !!python/object/apply:os.system ['touch {marker}']\n",
        "name: !!python/name:os.system\n",
        f"environment: !!python/object/new:subprocess.Popen [[touch, '{marker}']]\n",
        "seed: !!binary aGVsbG8=\n",
        "seed: !!set {a, b}\n",
        "seed: 2001-12-14t21:59:43.10-05:00\n",
        "seed: 2020-13-45\n",
        "seed: !foo bar\n",
        "sample_hz: !!float nan\n",
        "cpus: !!int '0x1F'\n",
        "seed: !!str 3\n",
        "junk: &x [1, 2]\nmore: *x\n",
        "training: &t {lr: 0.1}\nlearners: *t\n",
        "env_runners: {<<: {num_env_runners: 1}}\n",
        "grid: {env_config.x: &r [1, *r]}\n",
        "x:\n  l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n" + LAUGHS,
        "name: twice\nname: again\n",
        "---\nname: second\n",
        "...\n",
        "\tname: tab\n",
        "? [a, b]\n: 1\n",
        "? {a: 1}\n: 2\n",
        "stop: {iterations: " + "[" * draw(st.integers(30, 3000)) + "\n",
        "env_config: {x: " + "[" * 40 + "]" * 40 + "}\n",
        "\ufeffname: bom\n",
        'name: "\\e[2J\\a"\n',
        "%YAML 1.1\n---\n",
        "&a name: x\n",
        "*a\n",
        "!!map\n",
    ]
    feature = draw(st.sampled_from(features))
    where = draw(st.sampled_from(["end", "start", "middle"]))
    if where == "end":
        return text + feature
    if where == "start":
        return feature + text
    lines = text.splitlines(True)
    cut = draw(st.integers(0, len(lines)))
    return "".join(lines[:cut]) + feature + "".join(lines[cut:])


def _text_damage(draw, text: str) -> str:
    if not text:
        return text
    at = draw(st.integers(0, len(text)))
    kind = draw(st.sampled_from(["truncate", "insert", "delete"]))
    if kind == "truncate":
        return text[:at]
    if kind == "insert":
        return (
            text[:at]
            + draw(
                st.sampled_from(
                    [
                        ":",
                        "[",
                        "{",
                        "]",
                        "}",
                        "-",
                        "&",
                        "*",
                        "!",
                        "|",
                        ">",
                        "\t",
                        "\0",
                        "\x1b",
                        "'",
                        '"',
                        "#",
                        "%",
                        "@",
                        "`",
                        "\n",
                        "\ufeff",
                        "é",
                    ]
                )
            )
            + text[at:]
        )
    return text[:at] + text[at + 1 :]


@st.composite
def spec_cases(draw) -> tuple[str, bytes | None]:
    """(YAML text, or raw bytes when the case is not valid UTF-8) of one mutated spec."""
    data = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(0, 3))):
        data = draw(st.sampled_from(DATA_MUTATIONS))(draw, data)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return text, draw(st.sampled_from([None, "feature", "feature", "damage", "bytes"]))


def run_one(raw: bytes, workdir: Path) -> str:
    """Run one case in ``workdir`` (empty); returns ``exit 0``, ``exit 2`` or ``FAIL: ...``."""
    spec, out, home = workdir / "spec.yaml", workdir / "out", workdir / "home"
    home.mkdir()
    spec.write_bytes(raw)
    marker = workdir / "marker"

    def snapshot():
        return sorted((str(p.relative_to(workdir)), p.stat().st_size) for p in workdir.rglob("*"))

    before = snapshot()
    from rlbench.commands import main

    saved = {k: os.environ.get(k) for k in ("HOME", "RAY_ADDRESS", "COLUMNS")}
    os.environ["HOME"], os.environ["COLUMNS"] = str(home), "200"
    os.environ.pop("RAY_ADDRESS", None)
    cwd = os.getcwd()
    os.chdir(REPO)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            code = main(["sweep", str(spec), "--out", str(out), "--dry-run"])
            if code == 2:
                real = main(["sweep", str(spec), "--out", str(out)])
                if real != 2:
                    return f"FAIL: dry run said 2, the real run {real}"
    except SystemExit as e:
        return f"FAIL: SystemExit({e.code})"
    except BaseException:  # noqa: BLE001 - a traceback: exactly what must never happen
        return "FAIL: " + traceback.format_exc(limit=-3)
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if code not in (0, 2):
        return f"FAIL: exit {code}"
    if "Traceback" in captured.getvalue():
        return "FAIL: a traceback was printed"
    if marker.exists():
        return "FAIL: a YAML tag ran code"
    after = snapshot()
    if after != before:
        return f"FAIL: exit {code} wrote {sorted(set(after) - set(before))}"
    return f"exit {code}"


@st.composite
def cases(draw) -> bytes:
    """The bytes of one mutated spec file (the marker path is filled in by :func:`materialise`)."""
    text, how = draw(spec_cases())
    if how == "feature":
        text = _yaml_feature(draw, text, Path("@MARKER@"))
    elif how == "damage":
        text = _text_damage(draw, text)
    raw = text.encode("utf-8", errors="surrogatepass")
    if how == "bytes":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"])) + raw[at:]
    return raw


def materialise(raw: bytes, workdir: Path) -> bytes:
    """The case with its marker path pointing into ``workdir``."""
    return raw.replace(b"@MARKER@", str(workdir / "marker").encode())


def check(raw: bytes) -> str:
    """Run one case in a fresh temporary folder."""
    with tempfile.TemporaryDirectory(prefix="rlbench-fuzz-") as tmp:
        return run_one(materialise(raw, Path(tmp)), Path(tmp))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    args = parser.parse_args(argv)
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[tuple[bytes, str]] = []

    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases())
    def run(raw: bytes) -> None:
        outcome = check(raw)
        outcomes["FAIL" if outcome.startswith("FAIL") else outcome] += 1
        if outcome.startswith("FAIL"):
            failures.append((raw, outcome))

    if args.seed is not None:
        run = seed(args.seed)(run)
    t = time.perf_counter()
    run()
    took = time.perf_counter() - t
    tried = sum(outcomes.values())
    print(
        f"tried {tried} mutated specs in {took:.0f} s: " + ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
    )
    for raw, outcome in failures[:5]:
        print(f"\n--- failing spec ({outcome.splitlines()[0] if outcome else ''}):\n{raw[:600]!r}\n{outcome}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
