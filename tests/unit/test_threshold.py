from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from service.domain.threshold import Threshold, parse_level


@given(
    st.floats(-1, 1),
    st.floats(-1, 1),
    st.floats(0, 1, exclude_min=True),
)
def test_threshold_is_linear_interpolation(a: float, b: float, level: float) -> None:
    low, high = min(a, b), max(a, b)
    assert Threshold(low, high).score_for(level) == pytest.approx(low + level * (high - low))


def test_level_zero_means_no_threshold() -> None:
    assert Threshold(0.1, 0.6).score_for(0.0) is None


def test_level_one_is_the_maximum() -> None:
    assert Threshold(0.1, 0.6).score_for(1.0) == pytest.approx(0.6)


@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan, math.inf, -math.inf, "abc", "", True, [0.5], {}])
def test_bad_levels_are_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="relevancy level"):
        parse_level(bad)


@pytest.mark.parametrize(("given_", "expected"), [(None, None), (0, 0.0), ("0.25", 0.25), (1, 1.0)])
def test_good_levels(given_: object, expected: float | None) -> None:
    assert parse_level(given_) == expected


def test_relevance_is_the_same_interpolation_clamped() -> None:
    scale = Threshold(0.2, 0.6)
    assert scale.relevance(0.4) == pytest.approx(0.5)
    assert scale.relevance(0.0) == 0.0
    assert scale.relevance(0.9) == 1.0


def test_min_above_max_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        Threshold(0.7, 0.2)
