"""A received folder that is a git checkout: its config can make ``git status`` run a command.
The manifest's ``spec_git_commit`` is read from the .git files, running nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlbench.measure.machine import git_commit, head_commit, probe_machine
from rlbench.planning.plan import plan_trials
from rlbench.run.manifest import manifest
from rlbench.spec.load import load_spec


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def hostile_repo(tmp_path):
    """A checkout whose .git/config runs ``touch MARKER`` from git status (fsmonitor and a clean filter)."""
    repo = tmp_path / "received"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "spec.yaml").write_text("name: x\nenvironment: {env: CartPole-v1}\nstop: {iterations: 3}\n")
    (repo / ".gitattributes").write_text("*.yaml filter=evil\n")
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "results", cwd=repo)
    commit = _git("rev-parse", "HEAD", cwd=repo)
    marker = tmp_path / "pwned"
    with open(repo / ".git" / "config", "a") as f:
        f.write(
            f"[core]\n\tfsmonitor = touch {marker}.fsmonitor; false\n"
            f'[filter "evil"]\n\tclean = touch {marker}.filter; cat\n'
        )
    (repo / "spec.yaml").write_text((repo / "spec.yaml").read_text() + "# edited\n")
    return repo, commit, marker


def test_the_planted_config_is_real(hostile_repo):
    """Plain ``git status`` there does run the planted commands (what the manifest used to do)."""
    repo, _, marker = hostile_repo
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True)
    assert Path(f"{marker}.fsmonitor").exists() or Path(f"{marker}.filter").exists()


def test_manifest_reads_the_commit_and_runs_nothing(hostile_repo):
    repo, commit, marker = hostile_repo
    loaded = load_spec(repo / "spec.yaml", check_envs=False)
    info = manifest(loaded, probe_machine(), plan_trials(loaded, probe_machine()), ["rlbench"])
    assert info.spec_git_commit == commit  # read from .git/HEAD -> refs/heads/<branch>
    assert not Path(f"{marker}.fsmonitor").exists() and not Path(f"{marker}.filter").exists()


def test_head_commit_follows_packed_refs_worktrees_and_refuses_odd_files(tmp_path, hostile_repo):
    repo, commit, _ = hostile_repo
    _git("pack-refs", "--all", cwd=repo)
    assert head_commit(repo / "sub" / "folder") == commit  # found from a folder below, through packed-refs
    wt = tmp_path / "wt"
    _git("worktree", "add", "-q", str(wt), cwd=repo)
    assert head_commit(wt) == commit  # .git file -> gitdir -> commondir
    (repo / ".git" / "HEAD").write_text("ref: ../../../etc/passwd\n")
    assert head_commit(repo) is None
    assert head_commit(tmp_path / "nowhere") is None


def test_rlbench_own_checkout_still_says_dirty():
    own = git_commit(Path(__file__).resolve().parent)
    assert own is None or len(own.removesuffix("-dirty")) == 40
