"""ClassAds to the project's types: pure translation, no pool and no state.

HTCondor's states and attribute names map to :mod:`osep.core.model` through the tables here. A bad ad
raises :class:`BadAd` naming the problem; the caller decides whether to log and skip it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import classad2

from osep.core.model import Job, JobId, JobState, Slot
from osep.errors import PoolError

# JobStatus -> the project's states. Transferring output (6) and suspended (7) still hold their slot,
# but are never victims: the one is about to finish, the other does no work a vacate would free.
JOB_STATES: dict[int, JobState] = {
    1: JobState.IDLE,
    2: JobState.RUNNING,
    3: JobState.REMOVED,
    4: JobState.COMPLETED,
    5: JobState.HELD,
    6: JobState.RUNNING,
    7: JobState.RUNNING,
}
VACATABLE = {2}  # the statuses of jobs a vacate may take the slot from

JOB_ATTRS = [
    "ClusterId", "ProcId", "Owner", "User", "AcctGroup", "AccountingGroup", "JobStatus",
    "JobUniverse", "QDate", "JobCurrentStartDate", "LastCkptTime", "RequestCpus", "RequestMemory",
    "RequestGPUs", "RequestDisk", "RemoteHost", "ServerTime",
    # What the request expressions of a stock submit file refer to (RequestMemory is
    # ifthenelse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + 1023) / 1024), RequestDisk
    # is DiskUsage).
    "MemoryUsage", "ImageSize", "ResidentSetSize", "DiskUsage",
]
SLOT_ATTRS = ["Name", "Cpus", "Memory", "GPUs", "Disk", "SlotType", "State", "ParentSlotId",
              "SlotWeight", "RemoteUser", "RemoteOwner"]
# Slots in these states cannot run a job for anyone, so they are not capacity.
UNAVAILABLE = {"Owner", "Drained", "Delete"}
# Jobs of these universes run on the submit machine (scheduler: DAGMan; local) or at another site
# (grid): they occupy no execute slot, so they are neither demand nor usage.
OFF_SLOT_UNIVERSES = {7: "scheduler", 9: "grid", 12: "local"}
# Only jobs that are demand or hold a slot are read.
JOB_CONSTRAINT = (
    "(JobStatus == 1 || JobStatus == 2 || JobStatus == 6 || JobStatus == 7) && "
    + " && ".join(f"JobUniverse =!= {u}" for u in sorted(OFF_SLOT_UNIVERSES))
)

# What an attribute that evaluates to undefined or error (or to something that is not a number in
# range) is taken to be. The README's "Reading job ads" lists the same.
DEFAULTS: dict[str, float] = {
    "RequestCpus": 1,  # the negotiator's own default for a job that asks for nothing
    "RequestMemory": 0,  # unknown: the job is taken to fit any slot's memory
    "RequestGPUs": 0,  # a job that asks for no GPUs (undefined is the normal case, not counted)
    "RequestDisk": 0,  # unknown: the job is taken to fit any slot's disk
    "QDate": 0,  # unknown: the oldest
    "LastCkptTime": 0,  # no checkpoint
}
# Attributes whose absence is normal: undefined takes the default without being counted.
QUIET_DEFAULTS = {"LastCkptTime", "RequestGPUs"}
# Shown in the odd_ads examples for what has no number to stand in for it.
DEFAULT_TEXT = {"JobCurrentStartDate": "unknown: never a victim", "LastCkptTime": "no checkpoint"}
LARGEST = 2**31 - 1  # requests and times beyond this are not read as they are
# How far a time in an ad may lie ahead of the schedd's clock (ServerTime) before it is taken as
# wrong: a start or checkpoint in the future would make a job look like the cheapest victim.
SKEW = 300.0
LARGEST_DISK = 2**50  # KiB (an exbibyte): disks are counted in KiB and pass 2**31 at 2 TiB
# Times: none may lie more than SKEW ahead of the schedd's clock.
TIMES = {"QDate", "JobCurrentStartDate", "LastCkptTime"}
# Attributes read with a larger bound than LARGEST.
BOUNDS = {"RequestDisk": LARGEST_DISK, "Disk": LARGEST_DISK}

Ad = Mapping[str, Any]  # a classad2.ClassAd, or anything that reads like one


class BadAd(ValueError):
    """An ad that cannot be translated; the message says why."""


@dataclass(frozen=True, slots=True)
class JobAd:
    """A job, and the accounting name (submitter) the negotiator charges it to."""

    job: Job
    submitter: str


@dataclass(slots=True)
class AdTally:
    """What reading one snapshot's ads ran into: one log line per cycle, with counts and a few
    examples, whatever the number of ads."""

    examples_kept: int = 3
    defaulted: dict[str, int] = field(default_factory=dict)  # attribute -> ads it was defaulted in
    rejected: int = 0
    off_slots: int = 0  # jobs of universes that occupy no execute slot
    examples: list[str] = field(default_factory=list)

    def default(self, attr: str, where: str, value: Any) -> None:
        self.defaulted[attr] = self.defaulted.get(attr, 0) + 1
        taken = DEFAULT_TEXT.get(attr) or f"{DEFAULTS[attr]:g}"
        self._example(f"{where}: {attr} is {_show(value)}, taken as {taken}")

    def reject(self, problem: str) -> None:
        self.rejected += 1
        self._example(problem)

    def _example(self, text: str) -> None:
        if len(self.examples) < self.examples_kept:
            self.examples.append(text)

    def __bool__(self) -> bool:
        return bool(self.defaulted or self.rejected)


# What a literal holds that evaluating it gives back unchanged: reading such an attribute is one call
# into the bindings instead of three (a job ad is mostly literals; 100,000 ads a cycle in a large pool).
_PLAIN = frozenset((int, float, str))


def evaluate(ad: Ad, attr: str) -> Any:
    """The attribute as the negotiator sees it: evaluated in the ad's own context (a stock submit
    file writes RequestMemory as an expression). Missing: undefined."""
    evaluator = getattr(ad, "eval", None)
    if evaluator is None:  # an event log's event, or a plain mapping: values are literal
        return ad.get(attr, classad2.Value.Undefined)
    try:
        # The attribute as stored: a literal's value (an int, a float, a string are exactly what
        # evaluating the literal gives), anything else an expression or a value to evaluate.
        stored = ad[attr]
    except KeyError:
        return classad2.Value.Undefined
    if type(stored) in _PLAIN:
        return stored
    try:
        return evaluator(attr)
    except (classad2.ClassAdException, KeyError, ValueError, TypeError):
        return classad2.Value.Error


def integer(value: Any) -> int | None:
    """``value`` if it is a plain integer, else None. ``classad2.Value`` (undefined, error) is an
    int to Python and must never be read as one; nor is a bool."""
    if isinstance(value, int) and not isinstance(value, (bool, classad2.Value)):
        return value
    return None


def _number(value: Any, largest: int = LARGEST) -> float | None:
    """A finite number within what any pool can mean, or None (see :func:`integer`)."""
    if not isinstance(value, float) and integer(value) is None:
        return None
    if not math.isfinite(value) or not 0 <= value <= largest:
        return None
    return float(value)


def _show(value: Any) -> str:
    if isinstance(value, classad2.Value):
        return str(value.name).lower()
    return repr(value)


def owner_of(ad: Ad, group_alone: bool = False) -> str:
    """The owner a job counts for: the accounting identity the negotiator charges it to. That is its
    ``AccountingGroup`` where it has one: the group (``AcctGroup``) where the two agree
    (``group_physics.alice`` in ``group_physics``), else the accounting name as it stands, whoever
    submitted the job (a job that names ``carol`` is charged to carol, and counts for her). Without
    one, its ``Owner``: an ``AcctGroup`` alone changes nothing the negotiator charges, except with
    ``group_alone``, for event logs that record ``AcctGroup`` but not ``AccountingGroup``. KeyError
    if there is no owner at all."""
    accounting = evaluate(ad, "AccountingGroup")
    if isinstance(accounting, str) and accounting:
        group = evaluate(ad, "AcctGroup")
        if isinstance(group, str) and group and (accounting == group
                                                 or accounting.startswith(group + ".")):
            return group
        return accounting
    if group_alone:
        group = evaluate(ad, "AcctGroup")
        if isinstance(group, str) and group:
            return group
    return _owner(ad)


def account_of(ad: Ad) -> str:
    """The whole accounting name a job is charged to (``group_physics.cms.alice``): its
    ``AccountingGroup``, else its ``Owner``; what an owner tree places it by. KeyError if neither."""
    accounting = evaluate(ad, "AccountingGroup")
    if isinstance(accounting, str) and accounting:
        return accounting
    return _owner(ad)


def _owner(ad: Ad) -> str:
    owner = evaluate(ad, "Owner")
    if not isinstance(owner, str) or not owner:
        raise KeyError("Owner")
    return owner


def to_job(schedd: str, ad: Ad, tally: AdTally | None = None, pool: str = "",
           naming: Callable[[str], str] | None = None) -> JobAd | None:
    """One job ad; None for a job that occupies no execute slot (``OFF_SLOT_UNIVERSES``). A
    request that evaluates to undefined or error gets its default (``DEFAULTS``), counted in
    ``tally``, and so does a time more than ``SKEW`` after the ad's own ``ServerTime`` (the
    clock of the schedd that wrote it); an ad that cannot name or place the job raises
    :class:`BadAd`. ``naming``: the owner tree's placing of accounting names (else the owner is
    :func:`owner_of`)."""
    tally = tally if tally is not None else AdTally()

    def required(attr: str) -> float:
        value = _number(evaluate(ad, attr))
        if value is None:
            raise BadAd(f"{attr} is {_show(evaluate(ad, attr))}")
        return value

    now = _number(evaluate(ad, "ServerTime"))
    latest = LARGEST if now is None else now + SKEW

    def optional(attr: str) -> float:
        raw = evaluate(ad, attr)
        value = _number(raw, BOUNDS.get(attr, LARGEST))
        if value is not None and attr in TIMES and value > latest:
            value = None  # in the future: wrong, and a job must not gain by it
        if value is None:
            if raw is not classad2.Value.Undefined or attr not in QUIET_DEFAULTS:
                tally.default(attr, where(), raw)
            return DEFAULTS[attr]
        return value

    def where() -> str:  # the job, for a line about it (most ads need none)
        return f"{schedd}#{_show(evaluate(ad, 'ClusterId'))}.{_show(evaluate(ad, 'ProcId'))}"

    try:
        job_id = JobId(schedd, int(required("ClusterId")), int(required("ProcId")), pool)
        universe = _number(evaluate(ad, "JobUniverse"))
        if universe is not None and int(universe) in OFF_SLOT_UNIVERSES:
            tally.off_slots += 1
            return None
        status = int(required("JobStatus"))
        if status not in JOB_STATES:
            raise BadAd(f"JobStatus is {status}")
        state = JOB_STATES[status]
        user = evaluate(ad, "User")
        if not isinstance(user, str) or not user:
            raise BadAd(f"User is {_show(user)}")
        domain = user.rsplit("@", 1)[1] if "@" in user else ""
        owner = owner_of(ad) if naming is None else naming(account_of(ad))
        accounting = evaluate(ad, "AccountingGroup")
        submitter = f"{accounting}@{domain}" if isinstance(accounting, str) and accounting else user
        cpus = max(1, int(optional("RequestCpus")))
        memory = int(optional("RequestMemory"))
        gpus = int(optional("RequestGPUs"))
        disk = int(optional("RequestDisk"))
        submit = optional("QDate")
        slot = start = ckpt = None
        if state is JobState.RUNNING:
            host = evaluate(ad, "RemoteHost")
            if not isinstance(host, str) or not host:
                raise BadAd(f"RemoteHost is {_show(host)}")
            slot = host
            # Unknown start: the job still holds its slot and counts, but what a vacate would
            # cost it is unknown, so it is never a victim (see osep.core.victims).
            raw_start = evaluate(ad, "JobCurrentStartDate")
            start = _number(raw_start)
            if start is not None and start > latest:
                start = None
            if start is None:
                tally.default("JobCurrentStartDate", where(), raw_start)
            last = optional("LastCkptTime")
            ckpt = last if last > 0 else None
    except KeyError as exc:
        raise BadAd(f"{where()}: {exc.args[0] if exc.args else exc} is missing") from None
    except BadAd as exc:
        raise BadAd(f"{where()}: {exc}") from None
    job = Job(job_id, owner, state, submit, slot=slot, start_time=start, checkpoint_time=ckpt,
              cpus=cpus, memory=memory, gpus=gpus, disk=disk, vacatable=status in VACATABLE)
    return JobAd(job, submitter)


# Text in an ad (its expressions, lower-cased) that makes its translation depend on more than what
# its attributes say, or on its ProcId: eval() can name any attribute, and random(), time() and
# CurrentTime differ from one evaluation to the next. Such an ad is never read for another.
UNIQUE = ("procid", "eval(", "random(", "time(", "currenttime")
_JOB_FIELDS = tuple(f.name for f in fields(Job))
assert _JOB_FIELDS[0] == "id", "JobReader builds a job from its id and the template's other fields"


TEMPLATES = 1024  # clusters a reader keeps a template for at once (the oldest made goes first)


@dataclass(slots=True)
class _Template:
    ad: Any  # a copy of the template's ad, its ProcId set to each compared ad's in turn
    rest: tuple[Any, ...]  # the template job's fields after its id
    submitter: str
    misses: int = 0  # translated ads of its cluster that it did not match, since it was made


class JobReader:
    """:func:`to_job` for the ads one schedd query returns, with the same results, faster on the
    queue of a large pool: there most ads are the idle procs of a few submissions (clusters), equal
    but for their ``ProcId``, and the schedd lists them in no particular order.

    Per cluster, the ad of an idle job whose translation counted nothing in the tally (no default,
    no rejection) becomes the template, from the cluster's second such ad on (a cluster of one job
    costs nothing more), and again after two that did not match it; each ad of the cluster equal to
    it but for its ``ProcId`` (ClassAd equality, in the bindings: every attribute, expressions as
    written) is the same job under its own number, and is not translated again. An ad whose
    expressions name ``ProcId`` or use what ``UNIQUE`` lists is never a template, and any other ad
    is translated in full."""

    def __init__(self, schedd: str, tally: AdTally | None = None, pool: str = "",
                 naming: Callable[[str], str] | None = None) -> None:
        self.schedd = schedd
        self.tally = tally if tally is not None else AdTally()
        self.pool = pool
        self.naming = naming
        self.reused = 0  # ads read from a template
        self._templates: dict[int, _Template] = {}  # cluster -> its template
        self._seen: set[int] = set()  # clusters with an ad that could have been a template
        self._refused: set[int] = set()  # clusters whose ads cannot be templates

    def read(self, ad: Ad) -> JobAd | None:
        """As :func:`to_job` (None for a job that occupies no execute slot; :class:`BadAd` for an
        ad that cannot be read)."""
        job = self.repeat(ad)
        if job is not None:
            return JobAd(job, self._templates[job.id.cluster].submitter)
        return self.translate(ad)

    def repeat(self, ad: Ad) -> Job | None:
        """The job, if ``ad`` is its cluster's template but for its ``ProcId``: an idle job whose
        owner and submitter are those of the template's. Else None (:meth:`translate` reads it)."""
        try:
            cluster, proc = ad["ClusterId"], ad["ProcId"]
        except KeyError:
            return None
        if type(cluster) is not int or type(proc) is not int or not 0 <= proc <= LARGEST:
            return None
        template = self._templates.get(cluster)
        if template is None:
            return None
        template.ad["ProcId"] = proc
        if ad != template.ad:
            return None
        self.reused += 1
        return Job(JobId(self.schedd, cluster, proc, self.pool), *template.rest)

    def translate(self, ad: Ad) -> JobAd | None:
        """``ad`` translated in full (as :func:`to_job`); it may become its cluster's template."""
        tally = self.tally
        before = (sum(tally.defaulted.values()), tally.rejected, tally.off_slots)
        entry = to_job(self.schedd, ad, tally, self.pool, self.naming)
        if (entry is not None and entry.job.state is JobState.IDLE and type(ad) is classad2.ClassAd
                and before == (sum(tally.defaulted.values()), tally.rejected, tally.off_slots)):
            cluster = entry.job.id.cluster
            template = self._templates.get(cluster)
            if template is not None:
                template.misses += 1
                if template.misses >= 2:
                    self._keep(cluster, ad, entry)
            elif cluster in self._seen and cluster not in self._refused:
                self._keep(cluster, ad, entry)
            else:
                self._seen.add(cluster)
        return entry

    def _keep(self, cluster: int, ad: Any, entry: JobAd) -> None:
        """Make ``ad`` its cluster's template, if it can be one."""
        text = repr(ad)
        lowered = text.lower()
        copy = None
        if lowered.count("procid") == 1 and not any(word in lowered for word in UNIQUE[1:]):
            try:
                copy = classad2.ClassAd(text)
            except Exception:  # noqa: BLE001 - the edge: an ad the bindings print but cannot read back
                copy = None
        # Read back as it was: only then does equality with the copy mean equality with the ad.
        if copy is None or copy != ad:
            self._refused.add(cluster)
            self._templates.pop(cluster, None)
            return
        if cluster not in self._templates and len(self._templates) >= TEMPLATES:
            del self._templates[next(iter(self._templates))]
        job = entry.job
        self._templates[cluster] = _Template(
            copy, tuple(getattr(job, name) for name in _JOB_FIELDS[1:]), entry.submitter)


def parent_name(name: str, parent_id: Any) -> str | None:
    """The partitionable slot a dynamic slot ``slot<N>_<M>@host`` was carved from: ``slot<N>@host``
    (by its ParentSlotId where the ad has one, else by its name)."""
    local, at, host = name.partition("@")
    number = integer(parent_id)
    if number is not None:
        return f"slot{number}{at}{host}"
    base, underscore, _ = local.rpartition("_")
    return f"{base}{at}{host}" if at and underscore and base else None


def to_slots(ads: Iterable[Ad]) -> Iterator[Slot | BadAd]:
    """The slots the ads describe, in their order, with a :class:`BadAd` in place of each ad that
    cannot be read. Slots that cannot run a job for anyone (``UNAVAILABLE``) are left out, and so
    are dynamic slots of a partitionable slot that is."""
    gone: set[str] = set()
    seen: set[str] = set()
    dynamic: list[Slot] = []
    for ad in ads:
        name = evaluate(ad, "Name")
        if isinstance(name, str) and name in seen:
            # Two startds advertising one name: the place and its jobs would be confused.
            yield BadAd(f"{name}: a second slot ad of the same name")
            continue
        cpus = _number(evaluate(ad, "Cpus"))
        memory = _number(evaluate(ad, "Memory"))
        gpus = _number(evaluate(ad, "GPUs"))
        disk = _number(evaluate(ad, "Disk"), LARGEST_DISK)
        state = evaluate(ad, "State")
        kind = evaluate(ad, "SlotType")
        if not isinstance(name, str) or not name or cpus is None:
            yield BadAd(f"{ad_id(ad)}: Name is {_show(name)}, Cpus is {_show(evaluate(ad, 'Cpus'))}")
            continue
        seen.add(name)
        mib = int(memory) if memory is not None else None
        count = int(gpus) if gpus is not None else 0
        kib = int(disk) if disk is not None else None
        if kind == "Dynamic":
            parent = parent_name(name, evaluate(ad, "ParentSlotId"))
            if parent is None:
                yield BadAd(f"{name}: a dynamic slot without a parent")
                continue
            dynamic.append(Slot(name, int(cpus), mib, count, kib, parent=parent))
            continue
        if isinstance(state, str) and state in UNAVAILABLE:
            gone.add(name)
            continue
        if kind == "Partitionable":
            # What is still unclaimed; its dynamic slots hold the rest.
            yield Slot(name, int(cpus), mib, count, kib, partitionable=True)
        else:
            yield Slot(name, max(int(cpus), 1), mib, count, kib)
    for slot in dynamic:
        if slot.parent not in gone:
            yield slot


def slot_weights(ads: Iterable[Ad]) -> dict[str, float]:
    """Each slot's SlotWeight as its ad evaluates it: what the negotiator charges a submitter for
    the slot, and so what a ceiling counts (the negotiator's default, without SLOT_WEIGHT, is the
    slot's Cpus)."""
    out = {}
    for ad in ads:
        name = evaluate(ad, "Name")
        weight = _number(evaluate(ad, "SlotWeight"))
        if weight is None:
            weight = _number(evaluate(ad, "Cpus"))
        if isinstance(name, str) and weight is not None:
            out[name] = weight
    return out


def check_complete(slot_ads: Iterable[Ad], jobs: Iterable[Job], schedds: int) -> None:
    """Refuse a view that misses a schedd: slots claimed by jobs nobody can see would look free to
    the policy. A few claims may lead the job queues by an update interval; many may not."""
    ads = list(slot_ads)
    claimed = sum(1 for ad in ads if ad.get("State") == "Claimed")
    visible = sum(1 for j in jobs if j.state in (JobState.RUNNING, JobState.VACATING))
    tolerance = max(2, len(ads) // 20)
    if claimed - visible > tolerance:
        raise PoolError(
            f"incomplete view of the pool: {claimed} claimed slots but {visible} running jobs "
            f"in {schedds} schedd(s); a schedd is down or unreachable"
        )


@dataclass(slots=True)
class Accounts:
    """What one snapshot's jobs add up to per owner and per submitter: what the reservation book and
    the ceilings are kept by."""

    running: dict[str, int] = field(default_factory=dict)  # owner -> running jobs
    idle: dict[str, int] = field(default_factory=dict)  # owner -> idle jobs
    submitters: dict[str, set[str]] = field(default_factory=dict)  # owner -> accounting names
    charged: dict[str, set[str]] = field(default_factory=dict)  # accounting name -> owners
    # submitter -> what it holds, not vacating, in the negotiator's SlotWeight (cores by default)
    busy: dict[str, float] = field(default_factory=dict)
    # running job -> (owner, submitter, weight, start of its current run)
    placed: dict[JobId, tuple[str, str, float, float | None]] = field(default_factory=dict)
    # slot name -> its SlotWeight, as the slot ads give it (a job on a slot not named: its cores)
    weights: Mapping[str, float] = field(default_factory=dict)

    def add(self, entry: JobAd) -> None:
        job, submitter = entry.job, entry.submitter
        self.submitters.setdefault(job.owner, set()).add(submitter)
        self.charged.setdefault(submitter, set()).add(job.owner)
        if job.state is JobState.RUNNING:
            self.running[job.owner] = self.running.get(job.owner, 0) + 1
            weight = self.weights.get(job.slot or "", float(job.cpus))
            self.busy[submitter] = self.busy.get(submitter, 0.0) + weight
            self.placed[job.id] = (job.owner, submitter, weight, job.start_time)
        elif job.state is JobState.IDLE:
            self.idle[job.owner] = self.idle.get(job.owner, 0) + 1

    def again(self, job: Job) -> None:
        """One more idle job like one added already (same owner, same submitter): a job a
        :class:`JobReader` read from its cluster's template."""
        self.idle[job.owner] += 1

    def vacated(self, job_id: JobId) -> float | None:
        """The job was vacated: it no longer counts as running for its owner, nor as busy cores.
        Returns the start of the run it left (None if it was not seen running)."""
        placed = self.placed.pop(job_id, None)
        if placed is None:
            return None
        owner, submitter, cores, start = placed
        self.busy[submitter] = self.busy.get(submitter, 0.0) - cores
        self.running[owner] = self.running.get(owner, 1) - 1
        return start


# What osep's own ads say of the instance that publishes them (see osep.enforce.daemon).
OSEP_ATTRS = ["Name", "OSEPInstance", "OSEPStarted", "OSEPInterval", "OSEPDryRun", "LastHeardFrom"]


@dataclass(frozen=True, slots=True)
class OsepAd:
    """Another osep's ad in the collector: its name, its instance (``host:pid``), when it started,
    its interval, whether it runs dry, and when the collector last heard from it (epoch seconds)."""

    name: str
    instance: str
    started: float
    interval: float
    dry_run: bool
    heard: float


def to_osep_ad(ad: Ad) -> OsepAd | None:
    """An OSEP ad as another osep published it; None for one that does not say all of it (anyone
    allowed to advertise may put any ad there: it is not believed without every field)."""
    name, instance = evaluate(ad, "Name"), evaluate(ad, "OSEPInstance")
    started, interval = _number(evaluate(ad, "OSEPStarted")), _number(evaluate(ad, "OSEPInterval"))
    heard, dry_run = _number(evaluate(ad, "LastHeardFrom")), evaluate(ad, "OSEPDryRun")
    if not (isinstance(name, str) and isinstance(instance, str) and instance and isinstance(dry_run, bool)
            and started is not None and interval is not None and heard is not None):
        return None
    return OsepAd(name, instance, started, interval, dry_run, heard)


def ad_id(ad: Ad) -> str:
    try:
        if "Name" in ad:
            return str(ad["Name"])
        return f"{ad.get('ClusterId', '?')}.{ad.get('ProcId', '?')}"
    except Exception:  # noqa: BLE001 - only for a log line about an ad that is already bad
        return "?"
