"""Releases of one package as a spec's variants: what ``rlbench history`` and ``rlbench bisect`` run.

A spec plus ``--package ray --versions 2.58.0,2.59.0`` becomes the same spec with one variant per
version (``ray-2.58.0``: ``packages: {ray: 2.58.0}``) and ``rounds``, so the versions run interleaved,
round by round, through the ordinary sweep (:mod:`rlbench.spec.variants`, :mod:`rlbench.run.envs`).
Every mistake in the flags is a :class:`~rlbench.spec.model.SpecError` before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from rlbench.spec.model import LoadedSpec, SpecError
from rlbench.spec.variants import DIST_PATTERN, VERSION_PATTERN


def variant_name(package: str, version: str) -> str:
    """The variant that runs ``version`` of ``package``: ``ray-2.59.0``."""
    return f"{package}-{version}"


def parse_versions(text: str | None, flag: str = "--versions") -> list[str]:
    """``2.58.0,2.59.0`` -> ['2.58.0', '2.59.0']: exact versions, each once, in the order given."""
    versions = [v.strip() for v in (text or "").split(",") if v.strip()]
    if not versions:
        raise SpecError(f"{flag}: give the versions as a comma-separated list, e.g. {flag} 2.58.0,2.59.0,2.60.0")
    for version in versions:
        if not re.fullmatch(VERSION_PATTERN, version):
            raise SpecError(f"{flag}: {version!r} is not an exact version such as 2.59.0 (ranges are not versions)")
    repeated = sorted({v for v in versions if versions.count(v) > 1})
    if repeated:
        raise SpecError(f"{flag}: {', '.join(repeated)} given twice: name each version once")
    return versions


def check_package(package: str) -> str:
    """The distribution name as given, or SpecError."""
    if not re.fullmatch(DIST_PATTERN, package or ""):
        raise SpecError(
            f"--package {package!r}: not a distribution name (letters, digits, '.', '_', '-'), e.g. --package ray"
        )
    return package


def index_value(index: str | None) -> str | None:
    """``--index`` as the spec holds it: a URL as given, a local folder as an absolute path (SpecError if
    it is not a folder)."""
    if index is None or "://" in index:
        return index
    folder = Path(index).expanduser().resolve()
    if not folder.is_dir():
        raise SpecError(f"--index {index}: no such folder (give a package index URL, or a folder of wheels)")
    return str(folder)


def with_versions(
    data: dict,
    package: str,
    versions: Sequence[str],
    rounds: int,
    index: str | None,
    source: Path,
    rounds_per_process: int | None = None,
) -> dict:
    """The spec mapping ``data`` with one variant per version and ``rounds`` rounds (its own repeats and
    rounds replaced: each round runs every version once). SpecError if the spec has variants already.
    ``rounds_per_process`` replaces the spec's (None: the spec's); either is cut to ``rounds`` (one round: 1)."""
    if "variants" in data:
        raise SpecError(
            f"{source}: variants: this command makes the variants itself, one per --versions entry; "
            "remove 'variants:' from the spec (or run the spec as it is with rlbench sweep)"
        )
    out = {k: v for k, v in data.items() if k not in ("repeats", "rounds")}
    out["variants"] = [
        {"name": variant_name(package, v), "packages": {package: v}, **({"index": index} if index is not None else {})}
        for v in versions
    ]
    out["rounds"] = rounds
    per = data.get("rounds_per_process", 1) if rounds_per_process is None else rounds_per_process
    if isinstance(per, int) and not isinstance(per, bool) and per > 1:  # anything else is the validation's to name
        out["rounds_per_process"] = min(per, rounds) if rounds > 1 else 1
    elif rounds_per_process is not None or "rounds_per_process" in data:
        out["rounds_per_process"] = per
    return out


def load_versions(
    path: Path,
    package: str,
    versions: Sequence[str],
    rounds: int,
    index: str | None,
    *,
    grid: dict | None = None,
    rounds_per_process: int | None = None,
) -> LoadedSpec:
    """The spec at ``path`` run across ``versions`` of ``package`` (see :func:`with_versions`); SpecError
    for anything wrong in the file or the flags (an unsupported Ray among them: :mod:`rlbench.adapters`).
    ``grid`` replaces the spec's grid (a history's confirmation runs one configuration: each axis one value);
    ``rounds_per_process`` the spec's (:func:`with_versions`)."""
    from rlbench.spec.load import spec_from_dict
    from rlbench.spec.yamlfile import read_yaml

    path = Path(path)
    check_package(package)
    data, lines = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: the top level must be a mapping of keys (name:, environment:, grid:, ...)")
    if grid is not None:
        data = {**data, "grid": grid}
    for version in versions:
        name = variant_name(package, version)
        if len(name) > 40:
            raise SpecError(
                f"--package {package} with version {version}: the variant name {name!r} is longer than 40 characters"
            )
    try:
        return spec_from_dict(
            with_versions(data, package, versions, rounds, index_value(index), path, rounds_per_process),
            source=path,
            lines=lines,
        )
    except SpecError as e:  # a made variant is named by the flag that made it, not by a line the file lacks
        raise SpecError(
            re.sub(
                rf"^{re.escape(str(path))}: variants\[(\d+)\]\.packages\.[^:]+: ",
                lambda m: f"--versions {versions[int(m.group(1))]}: ",
                str(e),
                flags=re.M,
            )
        ) from None
