"""The schedd constraints that re-check named jobs (:meth:`osep.htcondor.live.LivePool.look`)."""

from __future__ import annotations

from collections.abc import Iterable

from osep.replay.damage import MAX_JOB_NUMBER

RECHECK_CHUNK = 100  # jobs per re-check query (a constraint of about 4 KiB)


def job_constraints(pairs: Iterable[tuple[int, int]], chunk: int = RECHECK_CHUNK) -> list[tuple[str, int]]:
    """Schedd constraints that select the jobs ``pairs`` names (cluster, proc), at most ``chunk`` jobs
    each, with how many jobs each names (the most it can match: the query's limit, so that the
    schedd may stop once it has found them). Built from integers only: a pair that is not two job
    numbers HTCondor could give (0 to 2^31 - 1) names no job in any queue and is left out."""
    numbers = sorted({(int(c), int(p)) for c, p in pairs if _job_number(c) and _job_number(p)})
    step = max(1, chunk)
    out = []
    for at in range(0, len(numbers), step):
        part = numbers[at:at + step]
        out.append((" || ".join(f"(ClusterId == {c:d} && ProcId == {p:d})" for c, p in part), len(part)))
    return out


def _job_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_JOB_NUMBER

