"""Negotiator ceilings against a fake negotiator, kept in a real state file: never raised above an
administrator's, never lost, never left behind, whatever fails and whenever osep dies."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from osep.config.livepool import LiveSettings
from osep.errors import PoolError
from osep.htcondor.ceilings import Ceilings
from osep.htcondor.job_ads import Accounts
from osep.htcondor.live import LivePool
from osep.htcondor.state import StateFile, read_state
from osep.htcondor.state_format import SavedState, StateError

LOG = structlog.get_logger("osep")


class Crash(BaseException):
    """kill -9: nothing catches it, and the process it hits writes nothing more."""


class FakeNegotiator:
    def __init__(self, current: dict[str, int] | None = None, name: str = "negotiator@cm",
                 leases: bool = False) -> None:
        self.name = name
        self.leases = leases
        self.current = dict(current or {})
        self.sent: list[tuple[str, int]] = []
        self.leased: list[tuple[str, int, float | None]] = []  # every command, with its lease

    def ceilings(self) -> dict[str, int]:
        return dict(self.current)

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        self.sent.append((submitter, value))
        self.leased.append((submitter, value, lease))
        self.current[submitter] = value


class Flaky(FakeNegotiator):
    """Refuses every command after the first ``works`` ones."""

    def __init__(self, works: int, current: dict[str, int] | None = None) -> None:
        super().__init__(current)
        self.works = works

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        if len(self.sent) >= self.works:
            raise PoolError("negotiator down")
        super().set_ceiling(submitter, value, lease)


class Process:
    """One run of osep: its ceilings over the state file at ``path``. Once ``dead`` (a crash), it
    writes nothing more, as a process killed with kill -9 would not."""

    def __init__(self, path: Path, save_fails: bool = False) -> None:
        self.path = path
        self.dead = False
        self.save_fails = save_fails
        self.ceilings = Ceilings(read_state(path).ceilings, LOG, self._persist)

    def _persist(self) -> None:
        if self.dead:
            return
        if self.save_fails:
            raise StateError(self.path, None, "cannot be written: No space left on device")
        StateFile(self.path).save(SavedState(ceilings=self.ceilings.records()))


def accounts(**busy: float) -> Accounts:
    out = Accounts()
    for submitter, cores in busy.items():
        owner = submitter.split("_")[0]
        name = f"{owner}@site"
        out.submitters.setdefault(owner, set()).add(name)
        out.busy[name] = cores
    return out


def two_owners() -> Accounts:
    out = accounts(alice=4.0)
    out.submitters["bob"] = {"bob@site"}
    out.busy["bob@site"] = 2.0
    return out


# -- the cases, one by one -------------------------------------------------------------------


def test_an_administrators_lower_ceiling_is_never_raised_not_even_on_the_first_hold(tmp_path):
    """Reported as 2 becoming 6 on the first hold, then 2 again."""
    negotiator = FakeNegotiator({"alice@site": 2})
    run = Process(tmp_path / "state")
    seen = []
    for busy in (6.0, 7.0, 1.0, 6.0):
        run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=busy))
        seen.append(negotiator.current["alice@site"])
    assert seen == [2, 2, 1, 2]  # lower than hers only while she runs less
    assert all(value <= 2 for _, value in negotiator.sent)
    run.ceilings.sync(negotiator, {}, accounts(alice=6.0))
    assert negotiator.current == {"alice@site": 2}


def test_a_failed_lift_keeps_the_administrators_ceiling_even_across_a_restart(tmp_path):
    """Reported as 7 becoming -1."""
    state = tmp_path / "state"
    run = Process(state)
    negotiator = Flaky(1, {"alice@site": 7})
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    with pytest.raises(PoolError):
        run.ceilings.sync(negotiator, {}, accounts(alice=4.0))
    assert run.ceilings.set == {"alice@site": 4} and negotiator.current == {"alice@site": 4}
    again = Process(state)  # the next run, or osep release
    healthy = FakeNegotiator(negotiator.current)
    again.ceilings.sync(healthy, {}, Accounts())
    assert healthy.current == {"alice@site": 7} and again.ceilings.set == {}


@pytest.mark.parametrize("applied", [True, False], ids=["after-the-command", "before-the-command"])
def test_a_crash_around_the_command_leaves_the_ceiling_on_record(tmp_path, applied):
    """Reported: kill -9 between setting the ceiling and saving left osep's 4 in force, taken by the
    next run for the administrator's and kept forever; osep release found nothing to lift."""
    state = tmp_path / "state"
    run = Process(state)

    class Dying(FakeNegotiator):
        def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
            if applied:
                super().set_ceiling(submitter, value)
            run.dead = True
            raise Crash()

    negotiator = Dying()
    with pytest.raises(Crash):
        run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    assert negotiator.current == ({"alice@site": 4} if applied else {})
    again = Process(state)
    assert again.ceilings.by_negotiator() == {"negotiator@cm": {"alice@site": 4}}  # release finds it
    healthy = FakeNegotiator(negotiator.current)
    again.ceilings.sync(healthy, {"alice": 0}, accounts(alice=3.0))  # the next run holds her again
    assert healthy.current == {"alice@site": 3}
    again.ceilings.sync(healthy, {}, accounts(alice=3.0))
    assert healthy.current == {"alice@site": -1}


def test_no_ceiling_is_set_that_could_not_be_recorded_first_but_lifts_go_on(tmp_path):
    state = tmp_path / "state"
    run = Process(state)
    negotiator = FakeNegotiator({"bob@site": 5})
    run.ceilings.sync(negotiator, {"bob": 0}, two_owners())
    run.save_fails = True
    with pytest.raises(PoolError, match=r"no ceiling set.*No space left"):
        run.ceilings.sync(negotiator, {"alice": 0}, two_owners())
    assert negotiator.sent == [("bob@site", 2), ("bob@site", 5)]  # bob lifted, alice never held
    assert run.ceilings.set == {}
    # The state file still names bob (it could not be written): the next run finds 5, not osep's 2.
    again = Process(state)
    assert again.ceilings.set == {"bob@site": 2}
    again.ceilings.sync(negotiator, {}, Accounts())
    assert negotiator.current == {"bob@site": 5} and again.ceilings.left == {"bob@site": 5}
    # Without a state file at all, the same.
    alone = Ceilings(None, LOG)
    with pytest.raises(PoolError, match="no state file"):
        alone.sync(negotiator, {"alice": 0}, two_owners())
    assert negotiator.current == {"bob@site": 5}


def test_an_administrators_change_during_a_hold_is_theirs_from_then_on(tmp_path):
    run = Process(tmp_path / "state")
    negotiator = FakeNegotiator()
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    negotiator.current["alice@site"] = 1  # the administrator lowers it
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=5.0))
    assert negotiator.current["alice@site"] == 1  # not raised to 5
    negotiator.current["alice@site"] = 9  # and raises it
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=6.0))
    assert negotiator.current["alice@site"] == 6  # held, below the administrator's 9
    run.ceilings.sync(negotiator, {}, accounts(alice=6.0))
    assert negotiator.current["alice@site"] == 9  # given back as the administrator last set it
    negotiator.current["alice@site"] = 3
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=6.0))
    negotiator.current["alice@site"] = -1  # removed by the administrator during the hold
    run.ceilings.sync(negotiator, {}, accounts(alice=6.0))
    assert negotiator.current["alice@site"] == -1 and run.ceilings.left == {"alice@site": -1}


def test_a_submitter_the_negotiator_does_not_list_may_still_have_osep_s_ceiling(tmp_path):
    run = Process(tmp_path / "state")
    negotiator = FakeNegotiator({"alice@site": 7})
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))

    class Forgetful(FakeNegotiator):
        def ceilings(self) -> dict[str, int]:
            return {}  # lists nobody, whatever it has

    forgetful = Forgetful(negotiator.current)
    run.ceilings.sync(forgetful, {}, Accounts())
    assert forgetful.current == {"alice@site": 7} and run.ceilings.left == {}


# -- ported from the earlier tests ----------------------------------------------------------------


def test_ceilings_of_an_earlier_run_are_taken_over_then_updated_or_lifted(tmp_path):
    state = tmp_path / "state.json"
    # A state file of the earliest format (before ceilings were kept per negotiator).
    state.write_text('{"ceilings": {"alice@site": 10, "carol@site": 4}, '
                     '"original": {"alice@site": -1, "carol@site": 7}}')
    run = Process(state)
    negotiator = FakeNegotiator({"alice@site": 10, "carol@site": 4})
    assert run.ceilings.set == {"alice@site": 10, "carol@site": 4}
    # This run holds alice again (now at 9 cores) and not carol: carol gets her own ceiling back.
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=9.0))
    assert sorted(negotiator.sent) == [("alice@site", 9), ("carol@site", 7)]
    # An allowance raises the ceiling by that much.
    run.ceilings.sync(negotiator, {"alice": 2}, accounts(alice=9.0))
    assert negotiator.sent[-1] == ("alice@site", 11)
    saved = read_state(state).ceilings
    assert saved == {"negotiator@cm": {"alice@site": saved["negotiator@cm"]["alice@site"]}}
    assert saved["negotiator@cm"]["alice@site"].values == (11,)
    run.ceilings.sync(negotiator, {}, accounts(alice=9.0))
    assert negotiator.sent[-1] == ("alice@site", -1) and run.ceilings.set == {}
    assert read_state(state) == SavedState()


def test_a_ceiling_is_on_record_with_when_its_hold_began_through_new_values_and_runs(tmp_path):
    """What ``osep report`` shows as held since: the time of the first ceiling of a hold, kept while
    osep sets other values, across a restart, and begun anew once the hold was lifted."""
    state = tmp_path / "osep.state"
    run = Process(state)
    negotiator = FakeNegotiator()

    def since() -> dict[str, float | None]:
        return {s: r.since for s, r in read_state(state).ceilings.get("negotiator@cm", {}).items()}

    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0), now=1000.0)
    assert since() == {"alice@site": 1000.0}
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=3.0), now=1100.0)
    again = Process(state)
    again.ceilings.sync(negotiator, {"alice": 0, "bob": 0}, two_owners(), now=1200.0)
    assert negotiator.sent[-1] == ("bob@site", 2) and since() == {"alice@site": 1000.0, "bob@site": 1200.0}
    again.ceilings.sync(negotiator, {"bob": 0}, two_owners(), now=1300.0)
    again.ceilings.sync(negotiator, {"alice": 0, "bob": 0}, two_owners(), now=1400.0)
    assert since() == {"alice@site": 1400.0, "bob@site": 1200.0}


def test_ceilings_are_kept_per_negotiator(tmp_path):
    state = tmp_path / "state.json"
    run = Process(state)
    one, two = FakeNegotiator(name="one"), FakeNegotiator({"alice@site": 3}, name="two")
    run.ceilings.sync(one, {"alice": 0}, accounts(alice=5.0))
    run.ceilings.sync(two, {"alice": 0}, accounts(alice=5.0))
    assert one.sent == [("alice@site", 5)] and two.sent == [("alice@site", 3)]  # never raised
    again = Process(state)
    again.ceilings.sync(two, {}, accounts())
    assert two.sent[-1] == ("alice@site", 3) and one.sent == [("alice@site", 5)]
    assert again.ceilings.by_negotiator() == {"one": {"alice@site": 5}}


def test_a_quick_release_makes_one_attempt_only(monkeypatch):
    sent = []
    pool = LivePool(LiveSettings(retries=5))
    monkeypatch.setattr(LivePool, "_sync_ceilings",
                        lambda self: sent.append((self.settings.retries, self.book.holds)))
    pool.release(quick=True)
    assert sent == [(1, {})]


def test_what_was_set_before_a_failure_is_saved_and_a_failed_lift_keeps_the_original(tmp_path):
    state = tmp_path / "state.json"
    run = Process(state)
    negotiator = Flaky(1)
    with pytest.raises(PoolError):
        run.ceilings.sync(negotiator, {"alice": 0, "bob": 0}, two_owners())
    # bob's command failed: it may have reached the negotiator, so it is on record to be lifted.
    assert Process(state).ceilings.set == {"alice@site": 4, "bob@site": 2}
    negotiator.works = 99
    run.ceilings.sync(negotiator, {"alice": 0, "bob": 0}, two_owners())
    assert negotiator.sent == [("alice@site", 4), ("bob@site", 2)]  # bob's again, alice's left as it is
    # The administrator had 7 on alice; the lift fails: osep still knows both values.
    run = Process(tmp_path / "other.json")
    run.ceilings.sync(FakeNegotiator({"alice@site": 7}), {"alice": 0}, accounts(alice=4.0))
    with pytest.raises(PoolError):
        run.ceilings.sync(Flaky(0, {"alice@site": 4}), {}, accounts(alice=4.0))
    assert run.ceilings.set == {"alice@site": 4}
    negotiator = FakeNegotiator({"alice@site": 4})
    run.ceilings.sync(negotiator, {}, accounts(alice=4.0))
    assert negotiator.sent == [("alice@site", 7)] and run.ceilings.set == {}


def test_no_negotiator_is_needed_while_osep_holds_nobody(tmp_path):
    run = Process(tmp_path / "state.json")
    ceilings = run.ceilings
    assert ceilings.unchanged({}, accounts())
    assert ceilings.unchanged({"carol": 0}, accounts())  # an owner with no submitter: nothing to set
    assert not ceilings.unchanged({"alice": 0}, accounts(alice=4.0))
    negotiator = FakeNegotiator()
    ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    # While it holds someone, every sync reads the negotiator (to see what others changed) but
    # sends only what differs.
    assert not ceilings.unchanged({"alice": 0}, accounts(alice=4.0))
    ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    assert negotiator.sent == [("alice@site", 4)]
    ceilings.sync(negotiator, {}, accounts(alice=4.0))
    assert ceilings.unchanged({}, accounts(alice=4.0))
    # Ceilings of an earlier run: a sync is due.
    ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    again = Process(tmp_path / "state.json").ceilings
    assert not again.unchanged({}, accounts())


def test_an_original_whose_ceiling_was_never_set_is_read_again(tmp_path):
    """The administrator has 5 on alice; osep's first hold fails before anything is set. Alice is
    released (her 5 is sent back, as the command may have gone through), the administrator lowers
    her to 2, alice is held again: 2 is what osep keeps, and gives back."""
    run = Process(tmp_path / "state.json")

    class Refusing(FakeNegotiator):
        def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
            raise PoolError("negotiator down")

    with pytest.raises(PoolError):
        run.ceilings.sync(Refusing({"alice@site": 5}), {"alice": 0}, accounts(alice=4.0))
    assert run.ceilings.set == {"alice@site": 4}  # may have reached it
    negotiator = FakeNegotiator({"alice@site": 5})
    run.ceilings.sync(negotiator, {}, accounts(alice=4.0))
    assert negotiator.sent == [("alice@site", 5)] and run.ceilings.set == {}
    negotiator.current["alice@site"] = 2
    run.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4.0))
    run.ceilings.sync(negotiator, {}, accounts(alice=4.0))
    assert negotiator.sent[1:] == [("alice@site", 2), ("alice@site", 2)]


# -- any sequence of holds, lifts, failures, crashes and administrators ----------------------------

SUBMITTERS = {"alice": ("alice@site",), "bob": ("bob@site",), "dave": ("dave@a", "dave@b")}
ALL = [s for names in SUBMITTERS.values() for s in names]


@dataclass
class Step:
    holding: dict[str, int]  # owner -> allowance ({}: every hold lifted)
    busy: dict[str, int]  # submitter -> cores it runs
    admin: tuple[str, int] | None  # before the sync, the administrator sets this ceiling
    fault: str  # "", "refuse", "crash-before", "crash-after", "save-fails", "save-crash-before",
    #             "save-crash-after", "read-crash"
    at: int  # which command (or save) the fault hits
    restart: bool  # a new process from the state file afterwards, as a --once run would


@dataclass
class World:
    path: Path
    negotiator: FakeNegotiator = field(default_factory=FakeNegotiator)
    admin: dict[str, int] = field(default_factory=dict)  # what the administrator last set
    crashes: int = 0
    failures: int = 0


FAULTS = ["", "", "", "refuse", "crash-before", "crash-after", "save-fails", "save-crash-before",
          "save-crash-after", "read-crash"]
steps = st.builds(
    Step,
    holding=st.dictionaries(st.sampled_from(sorted(SUBMITTERS)), st.integers(0, 3), max_size=3),
    busy=st.fixed_dictionaries({s: st.integers(0, 8) for s in ALL}),
    admin=st.none() | st.tuples(st.sampled_from(ALL), st.integers(-1, 12)),
    fault=st.sampled_from(FAULTS),
    at=st.integers(0, 4),
    restart=st.booleans(),
)


class Faulty:
    """The negotiator as one sync sees it, with the step's fault in it."""

    def __init__(self, world: World, process: Process, step: Step) -> None:
        self.name = world.negotiator.name
        self._world, self._process, self._step = world, process, step
        self._commands = 0

    def ceilings(self) -> dict[str, int]:
        if self._step.fault == "read-crash":
            self._die()
        return self._world.negotiator.ceilings()

    def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
        k, fault = self._commands, self._step.fault
        self._commands += 1
        if k == self._step.at and fault == "refuse":
            raise PoolError("negotiator down")
        if k == self._step.at and fault == "crash-before":
            self._die()
        self._world.negotiator.set_ceiling(submitter, value)
        if k == self._step.at and fault == "crash-after":
            self._die()

    def _die(self) -> None:
        self._process.dead = True
        raise Crash()


def _accounts(busy: dict[str, int]) -> Accounts:
    out = Accounts()
    for owner, names in SUBMITTERS.items():
        out.submitters[owner] = set(names)
        for name in names:
            out.busy[name] = float(busy[name])
    return out


def _osep_values(world: World, process: Process) -> dict[str, set[int]]:
    """Every value osep has, or may have, in force per submitter, as this process and the state
    file know them."""
    out: dict[str, set[int]] = {}
    for records in (process.ceilings.records(), read_state(world.path).ceilings):
        for by_submitter in records.values():
            for submitter, record in by_submitter.items():
                out.setdefault(submitter, set()).update(record.values)
    return out


def _one_step(world: World, process: Process, step: Step) -> Process:
    if step.admin is not None:
        submitter, value = step.admin
        # An administrator's change to a value osep has (or may have) in force cannot be told
        # from osep's own (docs/policy.md says so); anything else is theirs and must survive.
        if value not in _osep_values(world, process).get(submitter, set()) \
                and value != world.negotiator.current.get(submitter, -1):
            world.negotiator.current[submitter] = value
            world.admin[submitter] = value
    saves = 0
    real_persist = process.ceilings._persist

    def persist() -> None:
        nonlocal saves
        k = saves
        saves += 1
        if k == step.at and step.fault == "save-fails":
            raise StateError(world.path, None, "cannot be written: No space left on device")
        if k == step.at and step.fault == "save-crash-before":
            process.dead = True
            raise Crash()
        assert real_persist is not None
        real_persist()
        if k == step.at and step.fault == "save-crash-after":
            process.dead = True
            raise Crash()

    process.ceilings._persist = persist
    restart = step.restart
    try:
        process.ceilings.sync(Faulty(world, process, step), step.holding, _accounts(step.busy))
    except PoolError:
        world.failures += 1
    except Crash:
        world.crashes += 1
        restart = True
    finally:
        process.ceilings._persist = real_persist
    # Never raised above what the administrator set.
    for submitter, theirs in world.admin.items():
        if theirs >= 0:
            assert world.negotiator.current.get(submitter, -1) <= theirs, (submitter, theirs)
    return Process(world.path) if restart else process


def test_after_any_sequence_a_release_gives_every_submitter_what_the_administrator_last_set(
        tmp_path_factory, monkeypatch):
    """Any sequence of the administrator's changes, osep's holds and lifts, crashes around the
    commands and failed commands ends, at osep's release, with every submitter's ceiling what the
    administrator last set; and the examples did exercise crashes and failed commands, not only
    the easy paths (counted over all of them, checked once the search is over)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # crashes are simulated, not real: speed
    figures = {"examples": 0, "steps": 0, "crashes": 0, "failures": 0}

    @settings(max_examples=400, deadline=None)
    @given(start=st.fixed_dictionaries({s: st.integers(-1, 12) for s in ALL}),
           sequence=st.lists(steps, max_size=12))
    def any_sequence(start: dict[str, int], sequence: list[Step]) -> None:
        path = tmp_path_factory.mktemp("ceilings") / "state"
        world = World(path, FakeNegotiator({s: v for s, v in start.items() if v != -1}), dict(start))
        process = Process(path)
        for step in sequence:
            process = _one_step(world, process, step)
        # The last run, or osep release: a new process from the state file, with nothing failing.
        final = Process(path)
        final.ceilings.sync(world.negotiator, {}, _accounts(dict.fromkeys(ALL, 0)))
        assert final.ceilings.set == {} and read_state(path).ceilings == {}
        for submitter in ALL:
            assert world.negotiator.current.get(submitter, -1) == world.admin.get(submitter, -1), \
                submitter
        figures["examples"] += 1
        figures["steps"] += len(sequence)
        figures["crashes"] += world.crashes
        figures["failures"] += world.failures

    any_sequence()
    assert figures["crashes"] >= 20 and figures["failures"] >= 10, figures
    print(f"ceilings property: {figures}")


def test_one_submitters_failed_command_does_not_keep_the_others_from_theirs(tmp_path):
    class RefusesAlice(FakeNegotiator):
        def set_ceiling(self, submitter: str, value: int, lease: float | None = None) -> None:
            if submitter == "alice@site":
                raise PoolError("setting the ceiling of alice@site: SystemError: bad value")
            super().set_ceiling(submitter, value)

    run = Process(tmp_path / "state")
    negotiator = RefusesAlice()
    with pytest.raises(PoolError, match="alice@site"):
        run.ceilings.sync(negotiator, {"alice": 0, "bob": 0}, two_owners())
    assert negotiator.sent == [("bob@site", 2)]
    # alice's stays on record (it may have reached the negotiator) and is sent again next time.
    assert run.ceilings.set == {"alice@site": 4, "bob@site": 2}


def test_anything_the_bindings_raise_is_a_pool_error():
    pool = LivePool(LiveSettings(pool="127.0.0.1:1", retries=1))

    def broken() -> None:
        raise SystemError("<built-in function _negotiator_command> returned a result with an exception set")

    with pytest.raises(PoolError, match="setting a ceiling: SystemError"):
        pool.call("setting a ceiling", broken)


def test_an_accounting_name_charged_for_an_owner_not_held_is_never_capped(tmp_path, verbose_logs):
    # alice's jobs and some of dave's name one accounting group: holding alice must not hold dave.
    out = accounts(alice=4.0)
    out.submitters["alice"].add("group_x.u@site")
    out.submitters["dave"] = {"group_x.u@site"}
    out.charged = {"alice@site": {"alice"}, "group_x.u@site": {"alice", "dave"}}
    out.busy["group_x.u@site"] = 3.0
    run = Process(tmp_path / "state")
    negotiator = FakeNegotiator()
    with structlog.testing.capture_logs() as logs:
        run.ceilings.sync(negotiator, {"alice": 0}, out)
    assert negotiator.sent == [("alice@site", 4)]
    assert [e["submitters"] for e in logs if e["event"] == "submitter_shared"] == [["group_x.u@site"]]
    # Held together, both are capped.
    run.ceilings.sync(negotiator, {"alice": 0, "dave": 0}, out)
    assert ("group_x.u@site", 3) in negotiator.sent


def test_the_hold_is_in_force_before_the_first_vacate_at_what_the_owner_runs_after(monkeypatch, tmp_path):
    """A negotiation between a vacate and its hold could hand the room straight back: the ceiling
    goes first, at what the owner will run once the cycle's vacates are done."""
    from fakecondor import FakeCondor
    from osep.act.actuator import Actuator
    from osep.core.policy import PolicySettings, decide
    from osep.core.shares import ShareTable

    fake = FakeCondor()
    fake.run("alice", 4)
    fake.idle("alice", 3)
    fake.idle("bob", 2)
    fake.install(monkeypatch)
    order: list[str] = []
    set_ceiling, act = fake._set_ceiling, fake._act
    monkeypatch.setattr(fake, "_set_ceiling", lambda s, v: (order.append(f"ceiling {s} {v}"), set_ceiling(s, v)))
    monkeypatch.setattr(fake, "_act", lambda d, a, ids: (order.append(f"vacate {ids}"), act(d, a, ids))[1])
    pool = LivePool(LiveSettings(pool="cm.fake", retries=1, retry_wait=0.0,
                                 state_file=tmp_path / "osep.state"), clock=lambda: 10_000.0)
    plan = decide(pool.snapshot(), PolicySettings(ShareTable({"alice": 2, "bob": 2}), max_vacates=5))
    assert len(plan.vacates) == 2
    Actuator(pool).apply(plan)
    assert order[0] == "ceiling alice@site 2"  # 4 running, 2 of them leaving
    assert [o.split()[0] for o in order] == ["ceiling", "vacate", "vacate"]
    assert read_state(tmp_path / "osep.state").ceilings  # on record, as every ceiling is


def test_on_a_negotiator_with_leases_every_ceiling_is_a_lease_renewed_at_half_time(tmp_path):
    """So that a hold ends by itself should osep die: each ceiling is set for ``lease`` seconds and
    set again once half of that has passed; lifting it needs no lease."""
    process = Process(tmp_path / "osep.state")
    negotiator = FakeNegotiator(leases=True)
    holding = {"alice": 0}
    process.ceilings.sync(negotiator, holding, accounts(alice=4), now=1000.0, lease=120.0)
    assert negotiator.leased == [("alice@site", 4, 120.0)]
    process.ceilings.sync(negotiator, holding, accounts(alice=4), now=1059.0, lease=120.0)
    assert len(negotiator.leased) == 1  # not half way yet: nothing sent
    process.ceilings.sync(negotiator, holding, accounts(alice=4), now=1060.0, lease=120.0)
    assert negotiator.leased[1:] == [("alice@site", 4, 120.0)]  # renewed
    process.ceilings.sync(negotiator, holding, accounts(alice=3), now=1061.0, lease=120.0)
    assert negotiator.leased[2:] == [("alice@site", 3, 120.0)]  # a new value goes at once
    process.ceilings.sync(negotiator, {}, accounts(alice=3), now=1062.0, lease=120.0)
    assert negotiator.leased[3:] == [("alice@site", -1, None)]  # lifted: back to none
    # A new run renews every lease it takes over at its first sync.
    again = Process(tmp_path / "osep.state")
    process.ceilings.sync(negotiator, holding, accounts(alice=2), now=1063.0, lease=120.0)
    again = Process(tmp_path / "osep.state")
    sent = len(negotiator.leased)
    again.ceilings.sync(negotiator, holding, accounts(alice=2), now=1064.0, lease=120.0)
    assert negotiator.leased[sent:] == [("alice@site", 2, 120.0)]


def test_without_leases_a_ceiling_is_set_once_and_lasts(tmp_path):
    process = Process(tmp_path / "osep.state")
    negotiator = FakeNegotiator(leases=False)
    for now in (1000.0, 2000.0, 9000.0):
        process.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4), now=now, lease=120.0)
    assert negotiator.leased == [("alice@site", 4, None)]


def test_a_lapsed_lease_is_taken_as_lifted_quietly(tmp_path, verbose_logs):
    """A lease that ran out while osep was gone gave back the administrator's ceiling: it is theirs,
    and no warning says someone changed it."""
    process = Process(tmp_path / "osep.state")
    negotiator = FakeNegotiator({"alice@site": 7}, leases=True)
    process.ceilings.sync(negotiator, {"alice": 0}, accounts(alice=4), now=1000.0, lease=120.0)
    assert negotiator.current["alice@site"] == 4
    negotiator.current["alice@site"] = 7  # the negotiator's own doing: the lease ran out
    again = Process(tmp_path / "osep.state")
    with structlog.testing.capture_logs() as events:
        again.ceilings.sync(negotiator, {}, accounts(alice=4), now=5000.0, lease=120.0)
    assert [e["event"] for e in events if e["event"].startswith("ceiling")] == ["ceiling_lapsed"]
    assert negotiator.current["alice@site"] == 7 and again.ceilings.set == {}


@pytest.mark.parametrize("version, takes", [
    ("$CondorVersion: 25.14.1 2026-10-16 PackageID: 25.14.1+dfsg-1 $", True),
    ("$CondorVersion: 25.11.0 2026-06-01 $", True),
    ("$CondorVersion: 25.10.9 2026-05-01 $", False),
    ("$CondorVersion: 25.0.13 2026-01-01 $", False),
    ("$CondorVersion: 23.9.6 2024-08-01 BuildID: Debian-23.9.6+dfsg-2.1 $", False),
    ("$CondorVersion: 26.0.0 2027-01-01 $", True),
    ("25.14.1", False), (None, False), (25, False), ("", False),
])
def test_leases_are_taken_from_25_11_on(version, takes):
    from osep.htcondor.negotiator import takes_leases

    assert takes_leases(version) is takes


def test_a_restarted_collector_that_has_not_heard_of_the_negotiator_yet_does_not_strand_a_ceiling(
        monkeypatch, tmp_path, verbose_logs):
    """The negotiator osep set its ceilings on is reached at the address the collector last gave
    while the collector cannot say where it is; a process that never located it fails, saying why."""
    from fakecondor import NEGOTIATOR, FakeCondor

    fake = FakeCondor()
    fake.run("alice", 4)
    fake.install(monkeypatch)
    settings = LiveSettings(pool="cm.fake", retries=1, retry_wait=0.0, state_file=tmp_path / "osep.state")
    pool = LivePool(settings, clock=lambda: 10_000.0)
    pool.snapshot()
    pool.hold({"alice": 0})
    assert fake.ceilings == {"alice@site": 4}
    fake.unlisted.add("negotiator")
    with capture_logs() as logs:
        pool.release()
    assert fake.ceilings == {"alice@site": -1} and pool.ceilings_left() == {}
    assert [e["using"] for e in logs if e["event"] == "negotiator_not_located"] == ["<cm:1>"]
    # A new process (osep release) has no address to fall back on.
    fake.unlisted.clear()
    pool.close()
    again = LivePool(settings, clock=lambda: 10_000.0)
    again.snapshot()
    again.hold({"alice": 0})
    again.close()
    fresh = LivePool(settings, clock=lambda: 10_000.0)
    fake.unlisted.add("negotiator")
    with pytest.raises(PoolError, match="for the negotiator: Unable to locate local daemon"):
        fresh.release()
    assert fresh.ceilings_left() == {NEGOTIATOR: {"alice@site": 4}} and fresh.lapse() is None
    fresh.close()


def test_how_long_the_leases_left_behind_last(tmp_path):
    process = Process(tmp_path / "osep.state")
    assert process.ceilings.lapse(0.0) == 0.0  # nothing left
    leases = FakeNegotiator(leases=True)
    process.ceilings.sync(leases, {"alice": 0}, accounts(alice=4), now=1000.0, lease=120.0)
    assert process.ceilings.lapse(1030.0) == 90.0
    assert process.ceilings.lapse(2000.0) == 0.0
    # One that lasts until lifted (taken over from an earlier run, or set without a lease) decides.
    again = Process(tmp_path / "osep.state")
    assert again.ceilings.lapse(1030.0) is None
    plain = Process(tmp_path / "other.state")
    plain.ceilings.sync(FakeNegotiator(leases=False), {"alice": 0}, accounts(alice=4), now=1000.0, lease=120.0)
    assert plain.ceilings.lapse(1030.0) is None
