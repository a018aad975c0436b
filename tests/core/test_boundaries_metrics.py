"""Pk and WindowDiff against values computed by hand."""

from __future__ import annotations

import pytest

from copage.core.boundaries import default_k, pk, window_diff


def test_identical_segmentations_score_zero() -> None:
    assert pk([3, 7, 10], [3, 7, 10], 10) == 0.0
    assert window_diff([3, 7, 10], [3, 7, 10], 10) == 0.0


def test_shifted_boundary() -> None:
    # n=10, k=2, windows i=0..7. Reference boundary before turn 5 lies in windows i=3,4;
    # hypothesis boundary before turn 3 lies in windows i=1,2: 4 of 8 disagree.
    assert pk([5, 10], [3, 10], 10, k=2) == pytest.approx(0.5)
    assert window_diff([5, 10], [3, 10], 10, k=2) == pytest.approx(0.5)


def test_extra_boundary_pk_and_windowdiff_differ() -> None:
    # n=10, k=3, windows i=0..6. ref boundary 5 -> windows 2,3,4 hold 1 boundary.
    # hyp boundaries 4,5 -> window 1 holds 1, windows 2,3 hold 2, window 4 holds 1.
    # Pk errs only at i=1 (1/7); WindowDiff at i=1,2,3 (3/7).
    assert pk([5], [4, 5], 10, k=3) == pytest.approx(1 / 7)
    assert window_diff([5], [4, 5], 10, k=3) == pytest.approx(3 / 7)


def test_no_boundaries_hypothesis() -> None:
    # n=8, k=2, windows i=0..5; ref boundary 4 lies in windows 2,3.
    assert pk([4, 8], [8], 8, k=2) == pytest.approx(2 / 6)
    assert window_diff([4, 8], [8], 8, k=2) == pytest.approx(2 / 6)


def test_default_k_is_half_mean_segment_length() -> None:
    assert default_k([5, 10], 10) == 3  # mean length 5 -> 2.5 -> rounds half up
    assert default_k([10], 10) == 5
    assert default_k([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 10) == 1


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="window k"):
        pk([5], [5], 10, k=10)
    with pytest.raises(ValueError, match="outside"):
        window_diff([12], [5], 10, k=2)
    with pytest.raises(ValueError, match="at least 2 turns"):
        pk([1], [1], 1)
