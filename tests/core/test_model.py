"""The project's own types (osep.core.model): a Job with a negative request or a time that is not
finite is refused where it is made, with a message naming the job and the field."""

from __future__ import annotations

import math

import pytest

from osep.core.model import Job, JobId, JobState

ID = JobId("s", 7, 3)


@pytest.mark.parametrize(("fields", "says"), [
    ({"cpus": -1}, "job s#7.3: cpus must be at least 0, got -1"),
    ({"memory": -2048}, "memory must be at least 0, got -2048"),
    ({"gpus": -1}, "gpus must be at least 0"),
    ({"disk": -1}, "disk must be at least 0"),
    ({"cpus": math.nan}, "cpus must be at least 0, got nan"),
    ({"memory": -math.inf}, "memory must be at least 0, got -inf"),
    ({"submit_time": math.nan}, "submit_time must be a finite time, got nan"),
    ({"submit_time": math.inf}, "submit_time must be a finite time, got inf"),
    ({"start_time": -math.inf, "slot": "s1", "state": JobState.RUNNING}, "start_time must be a finite time"),
    ({"checkpoint_time": math.nan}, "checkpoint_time must be a finite time, got nan"),
    ({"cpus": -1, "submit_time": math.nan}, "cpus must be at least 0"),  # the first said
])
def test_a_job_with_a_negative_request_or_a_time_off_the_clock_is_refused(fields, says):
    fields = {"state": JobState.IDLE, **fields}
    with pytest.raises(ValueError) as info:
        Job(ID, "alice", **fields)
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("fields", [
    {}, {"cpus": 0}, {"memory": 0, "gpus": 0, "disk": 0}, {"cpus": 2**31, "memory": 2**40, "disk": 2**50},
    {"submit_time": -1.0}, {"submit_time": -0.0}, {"submit_time": 1e300},  # a time's sign means nothing here
    {"start_time": 0.0, "checkpoint_time": 1e18},
])
def test_every_request_of_zero_or_more_and_every_finite_time_is_taken(fields):
    job = Job(ID, "alice", JobState.IDLE, **fields)
    assert all(getattr(job, k) == v for k, v in fields.items())
