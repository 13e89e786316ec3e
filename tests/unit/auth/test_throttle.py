"""The failed-login delay: per name, doubling, capped, forgotten after a success or a quiet window."""

from __future__ import annotations

from tabletdb.auth.throttle import LoginThrottle


def test_delays_double_per_name_up_to_the_ceiling() -> None:
    throttle = LoginThrottle(base=0.1, ceiling=0.5, window=60)
    assert [throttle.failed("ghost", now=1.0) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    assert throttle.failed("other", now=1.0) == 0.1  # names are throttled apart


def test_a_success_or_a_quiet_window_starts_over() -> None:
    throttle = LoginThrottle(base=0.1, ceiling=5, window=60)
    throttle.failed("u", now=0)
    throttle.failed("u", now=1)
    throttle.succeeded("u")
    assert throttle.failed("u", now=2) == 0.1
    assert throttle.failed("u", now=3) == 0.2
    assert throttle.failed("u", now=100) == 0.1


def test_the_table_is_bounded() -> None:
    throttle = LoginThrottle(capacity=3)
    for n in range(10):
        throttle.failed(f"guess{n}", now=0)
    assert throttle.tracked() == 3
