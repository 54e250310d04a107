"""``rlbench history``'s versions: a range of the index's listing, every release or each minor's last patch."""

from __future__ import annotations

import pytest

from rlbench.run.index import every_minor, range_versions

LISTED = ["2.39.0", "2.40.0", "2.41.0", "2.42.0", "2.42.1", "2.43.0rc1", "2.43.0", "2.44.0", "2.44.1", "2.45.0"]


def test_every_release_between_the_ends():
    assert range_versions(LISTED, "2.41.0", "2.44.1", "release") == [
        "2.41.0",
        "2.42.0",
        "2.42.1",
        "2.43.0",
        "2.44.0",
        "2.44.1",
    ]


def test_each_minors_last_patch_with_the_ends_kept():
    assert range_versions(LISTED, "2.40.0", "2.44.0", "minor") == ["2.40.0", "2.41.0", "2.42.1", "2.43.0", "2.44.0"]
    assert every_minor(["2.42.0", "2.42.1", "2.43.0"]) == ["2.42.1", "2.43.0"]


def test_bad_ends_are_refused_with_what_the_index_has():
    with pytest.raises(ValueError, match="2.38.0 not in the index's listing"):
        range_versions(LISTED, "2.38.0", "2.44.0", "release")
    with pytest.raises(ValueError, match="--from must be the older release"):
        range_versions(LISTED, "2.44.0", "2.40.0", "release")
