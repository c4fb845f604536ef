"""Work spread over the local GPUs (`tawac.runtime.devices.per_device`), checked on the
CPU: the workers are real spawned processes; what they run needs no GPU."""

from __future__ import annotations

import os

import pytest

from tawac.runtime.devices import per_device


def square(x: int) -> int:
    return x * x


def visible(_job) -> str:
    return os.environ["CUDA_VISIBLE_DEVICES"]


def fails_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def test_results_come_back_in_job_order():
    seen = []
    outcomes = per_device(square, [1, 2, 3, 4, 5], 2, seen.append)
    assert [o.value for o in outcomes] == [1, 4, 9, 16, 25]
    assert [o.index for o in outcomes] == [0, 1, 2, 3, 4]
    assert sorted(o.index for o in seen) == [0, 1, 2, 3, 4]  # each reported as it came


def test_each_worker_sees_its_own_device():
    outcomes = per_device(visible, list(range(5)), 2)
    assert [o.value for o in outcomes] == ["0", "1", "0", "1", "0"]  # dealt round-robin


def test_a_failing_job_is_reported_and_the_rest_go_on():
    outcomes = per_device(fails_on_three, [1, 2, 3, 4], 2)
    assert [o.value for o in outcomes] == [1, 2, None, 4]
    assert outcomes[2].error == "ValueError: three"


def test_more_devices_than_jobs_and_none():
    assert [o.value for o in per_device(square, [3], 4)] == [9]
    assert per_device(square, [], 2) == []
    with pytest.raises(ValueError, match="devices"):
        per_device(square, [1], 0)
