"""Stopping a command and everything it started, and finding what it left running.

Every exit path stops the command the same way: SIGTERM to the group, to descendants that left it (found
in the process table while bash is alive) and to every process carrying the call's marker (`setsid -f`, double-forked
daemons), SIGKILL after `TERM_GRACE_S`, then reap. On cancellation this runs in a shielded scope, so a
cancelled call still leaves no process behind. The session's marker is the last net: when the session
ends, whatever still carries it is stopped.

Not covered: a process that clears its environment (`env -i`, or exec with an empty one) AND leaves the
group AND is orphaned before anything looks (`env -i setsid -f daemon`): no marker, no group, no parent
link remains to find it by. Where no process table can be read (Linux with /proc absent: procs.py,
"none"), only the group and the members of the command's session are found (`getsid` needs no /proc),
and members count as alive until their group is gone, zombies too, so the stop errs toward signalling
in vain. A process that left the session (`setsid`) is not found for its call; the server adopts such
orphans (adoption.py) and stops them when it exits. On macOS psutil reads the table and
the environments, so the markers hold there as on Linux. And if
the server itself is SIGKILLed nothing can stop its children. A cgroup would close the first gap, but an
unprivileged server can rarely create one, so the markers are what is relied on.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Collection

import anyio

from mcp_codetools.shell import adoption, procs
from mcp_codetools.shell.exit_watcher import ExitWatcher
from mcp_codetools.shell.sandbox import Confinement
from mcp_codetools.shell.spawning import Marker

TERM_GRACE_S = 1.0
KILL_WAIT_S = 2.0
RESCAN_ROUNDS = 3
"""Times the marker scan is repeated after the KILL, for processes a carrier started while it was dying."""
UNSURE_PAUSES_S = (0.001, 0.004, 0.016, 0.064)
"""Pauses before asking again a process caught between two programs; an `execve` takes well under 1 ms.

One whose environment is empty for good (`env -i`) is asked each time, then counted out: 85 ms in all."""


async def stop(
    proc: subprocess.Popen[bytes],
    watcher: ExitWatcher,
    marker: Marker | None = None,
    confinement: Confinement | None = None,
) -> None:
    """Stop a command and everything it started: TERM, a grace period, KILL, reap. Idempotent.

    In a container, the command's group and its marker's carriers are stopped inside it first (killing
    the local `exec` client would leave them running there).
    """
    if confinement is not None and confinement.container is not None and marker is not None:
        await confinement.container.stop_call(marker.entry)
    strays: list[int] = []
    if proc.returncode is None and not watcher.exited():
        strays = stray_descendants(proc.pid)
        signal_group(proc.pid, signal.SIGTERM)
        signal_pids(strays, signal.SIGTERM)
        if not await watcher.wait(TERM_GRACE_S):
            signal_group(proc.pid, signal.SIGKILL)
            await watcher.wait(KILL_WAIT_S)
    proc.poll()
    await stop_remaining(proc.pid, marker)
    signal_pids(strays, signal.SIGKILL)


async def namespace_teardown(pgid: int, marker: Marker) -> None:
    """Wait (bounded) for a sandbox's PID namespace to be gone after its wrapper exited.

    The command is the namespace's first process (`--as-pid-1`), and the kernel finishes that process's
    exit only once everything else in the namespace is dead, so normally nothing is left to see and this
    costs one signal-0 probe. Were bwrap to report before that (as it does with its own init process in
    the namespace), what is seen is the teardown, not leftovers: waiting keeps a finished command from
    being reported as having left processes. Anything still there after the bound is stopped as usual.
    """
    remaining = await Leftovers.find(pgid, marker)
    if remaining:
        await remaining.gone_within(KILL_WAIT_S)
        for carrier in remaining.carriers:
            carrier.close()


async def stop_remaining(pgid: int | None, marker: Marker | None) -> bool:
    """After the group leader is reaped: stop what is alive in the group or carries `marker`. True if any was."""
    remaining = await Leftovers.find(pgid, marker)
    if not remaining:
        return False
    await remaining.stop()
    return True


class _Carrier:
    """A process found by its marker, held by a pidfd so a reused pid can never be signalled by mistake."""

    def __init__(self, pid: int, pidfd: int | None) -> None:
        self.pid = pid
        self.pidfd = pidfd

    @classmethod
    def open(cls, pid: int, marker: Marker) -> _Carrier | None:
        """Hold `pid` if it still carries the marker once held (it may have exited and the pid been reused).

        Only just seen carrying it, a process now between two programs ("unsure") is the same one: a pid
        comes round again only after every other has been handed out.
        """
        return cls._hold(pid, lambda: procs.holding(pid, marker.name, marker.value) != "no")

    @classmethod
    def in_session(cls, pid: int, sid: int) -> _Carrier | None:
        """Hold `pid` if it is still in session `sid` once held."""

        def same_session() -> bool:
            try:
                return os.getsid(pid) == sid
            except OSError:
                return False

        return cls._hold(pid, same_session)

    @classmethod
    def _hold(cls, pid: int, still: Callable[[], bool]) -> _Carrier | None:
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # a thread id (probed, not listed): its process is found by its own pid
                return None
            pidfd = None  # a kernel before 5.3: fall back to the pid (kill() on a thread id signals its process)
        except AttributeError:  # not Linux
            pidfd = None
        if not still():
            if pidfd is not None:
                os.close(pidfd)
            return None
        return cls(pid, pidfd)

    def send(self, sig: int) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def exited(self) -> bool:
        if self.pidfd is not None:  # readable once the process has exited, reaped or not
            return bool(select.select([self.pidfd], [], [], 0)[0])
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _find_carriers(
    marker: Marker | None, pgid: int | None, known: Collection[int] = ()
) -> tuple[list[_Carrier], list[int]]:
    """(carriers of `marker` not in `known`, held; pids that could not be told yet); blocking, see `_carriers_of`.

    Where no table can list them (procs.py, "none"), what can still be found is: the members of the
    command's session (its sid is `pgid`) that moved to another group.
    """
    found = []
    unsure: list[int] = []
    if marker is not None:
        listed, maybe = procs.scan(marker.name, marker.value, marker.since) or ([], [])
        for pid in listed:
            if pid not in known:
                carrier = _Carrier.open(pid, marker)
                if carrier is not None:
                    found.append(carrier)
        unsure = [pid for pid in maybe if pid not in known]
    if pgid is not None and procs.table() == "none":
        for pid in procs.session_members(pgid):
            if pid not in known and _pgid(pid) != pgid:
                carrier = _Carrier.in_session(pid, pgid)
                if carrier is not None:
                    found.append(carrier)
    return found, unsure


async def _carriers_of(marker: Marker | None, pgid: int | None, known: Collection[int] = ()) -> list[_Carrier]:
    """Carriers of `marker` (and, without a process table, members of session `pgid`) not in `known`, held.

    A call's scan on /proc reads the few pids allocated since its bash, cheap enough for the event loop
    (it runs after every command); any other reads the whole table, so it runs in a worker thread.
    A process caught in `execve` (procs.holding: "unsure") is asked again after short pauses.
    """
    if marker is None and (pgid is None or procs.table() != "none"):
        return []
    if marker is not None and marker.since is not None and marker.since.forks is not None:
        found, unsure = _find_carriers(marker, pgid, known)
    else:
        found, unsure = await anyio.to_thread.run_sync(_find_carriers, marker, pgid, known)
    for pause in UNSURE_PAUSES_S:
        if not unsure or marker is None:
            break
        await anyio.sleep(pause)
        unsure = _settle(unsure, marker, found)
    return found


def _settle(unsure: list[int], marker: Marker, found: list[_Carrier]) -> list[int]:
    """Ask each unsure pid again: hold those that carry the marker now; return those still unsure."""
    still = []
    for pid in unsure:
        answer = procs.holding(pid, marker.name, marker.value)
        if answer == "yes":
            carrier = _Carrier.open(pid, marker)
            if carrier is not None:
                found.append(carrier)
        elif answer == "unsure":
            still.append(pid)
    return still


class Leftovers:
    """What a command left running: live members of its group and every process that carries its marker."""

    def __init__(self, pgid: int | None, marker: Marker | None, group: bool, carriers: list[_Carrier]) -> None:
        self.pgid = pgid
        self.marker = marker
        self.group = group
        self.carriers = carriers

    @classmethod
    async def find(cls, pgid: int | None, marker: Marker | None) -> Leftovers:
        """What of the group and the marker's carriers is still alive now."""
        group = pgid is not None and _group_alive(pgid)
        return cls(pgid, marker, group, await _carriers_of(marker, pgid))

    def __bool__(self) -> bool:
        return self.group or bool(self.carriers)

    async def stop(self) -> None:
        """TERM, the grace period, then KILL for what is left, including carriers started meanwhile."""
        try:
            self._send(signal.SIGTERM)
            gone = await self.gone_within(TERM_GRACE_S)
            for _ in range(RESCAN_ROUNDS):
                late = await self._late_carriers()
                if gone and not late:
                    return
                self.carriers.extend(late)
                self._send(signal.SIGKILL)
                gone = await self.gone_within(KILL_WAIT_S)
        finally:
            adoption.reap([carrier.pid for carrier in self.carriers])
            for carrier in self.carriers:
                carrier.close()

    async def _late_carriers(self) -> list[_Carrier]:
        known = {carrier.pid for carrier in self.carriers if not carrier.exited()}
        return await _carriers_of(self.marker, self.pgid, known)

    def _send(self, sig: int) -> None:
        if self.pgid is not None:
            signal_group(self.pgid, sig)
        for carrier in self.carriers:
            carrier.send(sig)

    def _alive(self) -> bool:
        if self.pgid is not None and _group_alive(self.pgid):
            return True
        return not all(carrier.exited() for carrier in self.carriers)

    async def gone_within(self, seconds: float) -> bool:
        """Poll until nothing is left alive; False when something still is after `seconds`."""
        deadline = time.monotonic() + seconds
        delay = 0.005
        while self._alive():
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return True


def signal_name(number: int) -> str:
    """The signal's name (`SIGTERM`), or its number when it has none."""
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name
        return f"signal {number}"


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a process group; one already gone (or no longer ours) is no error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stray_descendants(pid: int) -> list[int]:
    """Descendants of `pid` that left its process group (`setsid`), so a group signal misses them."""
    return [child for child in procs.descendants(pid) if _pgid(child) != pid]


def signal_pids(pids: list[int], sig: int) -> None:
    """Send `sig` to each pid; one already gone (or no longer ours) is no error."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    """Whether group `pgid` has a live (not zombie) member; by signal alone where /proc cannot tell."""
    adoption.reap_group(pgid)  # an adopted member that died is the server's zombie, which signal 0 still finds
    if not _group_exists(pgid):  # one system call answers the common case: the group is gone
        return False
    members = procs.group_members(pgid)
    return members is None or bool(members)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
