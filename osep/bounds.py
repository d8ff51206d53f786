"""The bounds on every number and string osep reads from a policy file, a scenario file or a knob.

Each bound is loose enough for any real pool and tight enough that nothing a file says can make
``osep validate`` or ``osep simulate`` run out of memory or time: docs/configuration.md's "Every bound" lists them
all. A value outside its bound is refused with one line naming the file, the key and the bound.
"""

from __future__ import annotations

# Files.
MAX_FILE_BYTES = 1 << 19  # a policy or scenario file: 512 KiB
MAX_TABLES = 2500  # lines opening a table ([name] or [[name]]) in a file
MAX_KEY_PARTS = 16  # parts of a dotted key (a.b.c has 3)
MAX_NAME = 255  # characters in an owner's or a scenario's name (printable ones only)
MAX_TEXT = 10_000  # characters in a description
MAX_PATH = 4096  # characters in a path (a knob's, a workload log's)
MAX_AMOUNT_TEXT = 64  # characters in an amount given as text ("1.5 TiB", "30%")

# Time, in seconds.
MIN_INTERVAL = 1.0  # t, and the simulated negotiation cycle
MAX_INTERVAL = 86_400.0  # t, a negotiation cycle, a vacate delay, a reservation: a day
MAX_SECONDS = 1e8  # any other time or duration (about three years)
MAX_TRACE_SECONDS = 1e10  # since and until in a workload log's own clock
MIN_COMPRESS, MAX_COMPRESS = 0.001, 1000.0  # what a workload log's submit times are divided by

# Counts.
MAX_OWNERS = 10_000  # owners in [owners] (leaves of a tree), and in a Fair-Share usage table
MAX_VACATES = 1_000_000  # p
MAX_VACATES_PER_JOB_PER_HOUR = 3600  # the cap of vacates of one job in any hour (OSEP_MAX_VACATES_PER_JOB_PER_HOUR)
MAX_PORT = 65_535  # a TCP port (OSEP_METRICS_PORT)
MAX_SLOTS = 10_000  # static slots and partitionable machines in a simulated pool
MAX_SLOT_GROUPS = 1000  # [[pool.slots]] tables
MAX_SLOT_CPUS = 4096  # cores of a simulated slot or machine, and of a job
MAX_SLOT_GPUS = 1024  # GPUs of a simulated slot or machine, and of a job
MAX_SLOT_MEMORY = 1 << 30  # MiB: 1 PiB
MAX_SLOT_DISK = 1 << 50  # KiB: 1 EiB
# Jobs in a scenario, from [[submit]], a workload log and a CSV job list together: a job costs about
# 0.3 KiB loaded (docs/simulate.md, "Bounds"), so a million stay near 300 MiB.
MAX_JOBS = 1_000_000
MAX_JOB_LIST_BYTES = 1 << 27  # a CSV job list: 128 MiB (a million jobs take about 40 MiB)
# A workload log (osep/sim/swf.py). The Parallel Workloads Archive's largest logs have a few million
# lines of under 200 bytes, up to about 250 MB uncompressed; the bounds take those, and stop a
# decompression bomb within seconds and a few MiB. Reading costs about 5 s a GiB before a line is
# looked at, and 5 to 15 us a record: a real log of a few million lines takes tens of seconds.
MAX_TRACE_BYTES = 1 << 28  # bytes of a log, after decompression: 256 MiB
MAX_TRACE_LINE = 1 << 16  # characters in one line: 64 KiB (a record is 18 numbers, under 200 bytes)
MAX_TRACE_RECORDS = 5_000_000  # data lines, read or left out (a real one is 50 to 120 bytes)
# Lines that are no record: blank lines, comments (the header is a few dozen), lines that are not 18
# numbers. A real log has a handful (its header a few dozen); a billion newlines (a gzip file of 1 MiB)
# would take minutes, a hundred thousand take a tenth of a second.
MAX_TRACE_OTHER_LINES = 100_000
MAX_TRACE_HEADER_KEYS = 1000  # header keys kept (a log has a few dozen; more are ignored)
MAX_TRACE_HEADER_VALUE = 1000  # characters of a header value kept (longer ones are cut)
MAX_SUBMITS = 1000  # [[submit]] tables
MAX_USAGE = 1e15  # a Fair-Share starting usage, in slot-seconds

# Shares, per resource (a percentage is at most 100).
MAX_SHARE = {"slots": 1e7, "cpus": 1e7, "gpus": 1e6, "memory": float(1 << 40),  # memory in MiB: 1 EiB
             "disk": float(1 << 50)}  # disk in KiB: 1 EiB
MAX_SHARE_DEFAULT = float(1 << 40)  # a share of a resource MAX_SHARE does not name

# What one simulation may cost: it stops at its horizon, which is never later than the time by which
# the pool has made MAX_CYCLES negotiation and enforcement cycles in all, nor than the time by which
# enforcement cycles x (slots + jobs / JOBS_PER_UNIT + OWNER_WORK x owners) plus negotiation cycles x
# owners reaches MAX_WORK. An enforcement cycle's cost grows with the slots and the owners (an owner
# costs the decision about twenty times what a slot does); the jobs in flight cost it little since the
# simulated pool keeps its view of them (a cycle hands the decision the kept view, and a job costs a
# few hundredths of a slot). A negotiation cycle's cost grows with the owners. docs/simulate.md's
# "The simulation's limit" gives what each costs, measured.
MAX_CYCLES = 1_000_000  # negotiation and enforcement cycles of one simulation
MAX_WORK = 80_000_000  # the work of one simulation, in slots (see above)
OWNER_WORK = 20  # what an owner costs an enforcement cycle, in slots
JOBS_PER_UNIT = 20  # jobs in flight that cost an enforcement cycle what one slot does


def share_maximum(resource: str) -> float:
    """The largest share of ``resource`` a policy may give one owner (in the resource's unit)."""
    return MAX_SHARE.get(resource, MAX_SHARE_DEFAULT)
