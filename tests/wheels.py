"""Pure-Python wheels written by a test, for installs with no network (``--index`` a local folder)."""

from __future__ import annotations

import zipfile
from pathlib import Path


def write_wheel(folder: Path, dist: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> Path:
    """A wheel of ``dist`` at ``version`` holding ``files`` (path in the wheel -> text), in ``folder``; ``requires``:
    its ``Requires-Dist`` lines."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = dist.replace("-", "_")
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    info = f"{stem}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: rlbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path
