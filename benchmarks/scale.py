"""Replicas behind HAProxy: `python -m benchmarks.scale [--replicas 3] [--clients 20] [--calls 1000] [--json]`.

Each client is the SDK's streamable HTTP client with its own folder, in one of two eras (`--eras`):

- 2025: the handshake era (`mode="legacy"`): the client's state is its session, and HAProxy sticks the
  session to its replica by `Mcp-Session-Id`;
- 2026: the 2026-07-28 protocol (`mode="auto"`, which negotiates it): no session; the client passes back
  the `state_id` a result gave, as a model does. Each replica runs with `--replica <its HAProxy name>`, so
  its ids read `st_<replica>_<random>`; the SDK mirrors `state_id` into `Mcp-Param-State-Id` (its schema's
  `x-mcp-header`) and HAProxy routes by that header alone (`use-server`). A state served by a replica
  other than the one its id names counts as switched; a call that reaches the wrong replica is answered
  "wrong replica" and counts as a wrong-replica error.

Each client makes a mix of calls that need its state: Read then Edit (the read ledger), `cd` then `pwd` (the
working directory), a background job then BashOutput (the job table), with Grep and Read checking what
the edits wrote. A call that lands on a replica without that state fails in a way the client sees (Edit:
"has not been read"; BashOutput: no such job; the wrong directory; "Session not found"); each response
also names the replica that served it (HAProxy's `X-Mcp-Replica`), and a session served by two replicas
counts too. The runs, in one process so the figures compare:

1. one replica, no balancer: the same calls, for the throughput baseline;
2. N replicas behind HAProxy: the same calls; errors caused by state on the wrong replica must be 0;
3. N replicas behind HAProxy again, and halfway through (half the calls, or the first client halfway through
   its own, whichever comes first), the replica holding most sessions of clients with calls still to make
   is killed (SIGKILL of its process group). Its clients must get an error that says to start a new session (2026:
   a new state; then they do, and finish their calls); the other clients must see no error at all; every client's file
   must be whole (the old or the new content, never a mix) with no temporary file left.

Exit status 0 when every check holds, 1 otherwise. Every process started is killed and reaped on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from benchmarks import replicas as lb
from mcp_codetools.files import writes

CALL_TIMEOUT_S = 60
LINES = 40
"""Lines of each client's file; the counter sits in the middle, so a half-written file shows."""


def initial_text(tag: str, counter: int) -> str:
    lines = [f"{tag} line {n:02d}: the quick brown fox" for n in range(LINES)]
    lines[LINES // 2] = f"counter = {counter}"
    return "\n".join(lines) + "\n"


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


ERAS = ("2025", "2026")
CLEAR_LOSS = re.compile(r"start a new (session|state)", re.I)
"""What a client whose state was lost with its replica must be told (2025: its session; 2026: its state)."""
HANDLE_LOST = "[handle "
"""How a 2026 handle error is tagged as it becomes `SessionLost` (`[handle wrong_replica] ...`)."""
MISROUTED = re.compile(r"\[handle (wrong_replica|unknown)\]")
"""A 2026 call answered by a replica that does not hold its state."""


@dataclass
class Outcome:
    """What one run saw."""

    label: str
    replicas: int
    clients: int
    era: str = "2025"
    calls: int = 0
    ok: int = 0
    seconds: float = 0.0
    wrong_replica: list[str] = field(default_factory=list)
    other_errors: list[str] = field(default_factory=list)
    switched_sessions: int = 0
    sessions_per_replica: dict[str, int] = field(default_factory=dict)
    server_cpu_s: float | None = None
    haproxy_cpu_s: float | None = None
    client_cpu_s: float = 0.0
    replica_rss_mib: list[float] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    # The kill run only.
    killed: str = ""
    affected_clients: int = 0
    affected_saw: list[str] = field(default_factory=list)
    unaffected_errors: list[str] = field(default_factory=list)
    restarted_sessions: int = 0
    files_checked: int = 0
    files_whole: int = 0
    temp_files_left: list[str] = field(default_factory=list)
    cut_write_debris: list[str] = field(default_factory=list)
    """Temp files of an Edit that was in flight on the killed replica: SIGKILL lands between the temp file's
    creation and its rename, so the dead process cannot remove it (the file itself stays whole). The next
    write of that file removes it once it is a minute old (`files.writes.sweep_stale_temps`); the check
    sweeps as that write would, so only debris the sweep takes is exempt: a temp file still locked (a
    writer alive) or of another name fails the run, as does any other temp file."""

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0


class SessionLost(Exception):
    """The client's session is gone (its replica died); the message is what the client was told."""


class Agent:
    """One client: its folder, its file, and what it has seen."""

    def __init__(self, index: int, workdir: Path, quota: int, era: str = "2025") -> None:
        self.era = era
        self.index = index
        self.folder = workdir / f"c{index:02d}"
        (self.folder / "sub").mkdir(parents=True)
        self.file = self.folder / "data.txt"
        self.tag = f"client {index:02d}"
        self.counter = 0
        self.in_flight_edit = False
        self.file.write_text(initial_text(self.tag, 0), encoding="utf-8")
        self.quota = quota
        self.done = 0
        self.replica_of: dict[str, set[str]] = {}
        self.session_id: str | None = None
        self.errors: list[str] = []
        self.lost: list[str] = []
        self.sessions = 0
        self.last_served: tuple[str, str] | None = None
        """2026: the state and replica of the last answer (taken back when it was a refusal: nothing was served)."""

    def on_response(self, response: httpx2.Response) -> None:
        replica = response.headers.get("x-mcp-replica")
        if self.era == "2026":  # the state's replica: named in its id, then each call that carried the id
            state = response.request.headers.get("mcp-param-state-id")
            if state and replica and response.status_code < 400:
                self.replica_of.setdefault(state, set()).add(replica)
                self.last_served = (state, replica)
            return
        key = response.headers.get("mcp-session-id") or response.request.headers.get("mcp-session-id")
        if key and replica and response.status_code < 400:
            self.replica_of.setdefault(key, set()).add(replica)
        if key and response.headers.get("mcp-session-id"):
            self.session_id = key

    def replica(self) -> str | None:
        seen = self.replica_of.get(self.session_id or "")
        return sorted(seen)[0] if seen else None


KILL_MARGIN = 3
"""Calls a client must have left to count as the killed replica's: the one in flight may still be answered, and
a Grep after it goes to any replica."""
STATELESS = frozenset({"Grep", "Glob"})
"""Tools whose schema has no `state_id` (they keep nothing): a 2026 client sends them none."""


class Caller:
    """Calls for one client; in the 2026 era it passes back the state_id a result gave (as a model does)."""

    def __init__(self, client: Client, agent: Agent) -> None:
        self.client = client
        self.agent = agent
        self.state_id: str | None = None

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.agent.era != "2026":
            return await call(self.client, name, arguments)
        if self.state_id is not None and name not in STATELESS:
            arguments = {**arguments, "state_id": self.state_id}
        result = await call(self.client, name, arguments)
        meta = result.meta or {}
        kind = meta.get("codetools/result", {}).get("handleError")
        if kind:
            last = self.agent.last_served
            if last is not None and last[0] == self.state_id and last[1] != last[0].split("_")[1]:
                self.agent.replica_of[last[0]].discard(last[1])  # a refusal, not a state served by two replicas
            raise SessionLost(f"{HANDLE_LOST}{kind}] {text_of(result)}")
        given = meta.get("codetools/stateId")
        if given and self.state_id is None:
            self.state_id = self.agent.session_id = given
            self.agent.replica_of.setdefault(given, set()).add(given.split("_")[1])  # the replica it names
        return result

    async def probe(self) -> None:
        """After a call that failed without saying why (its replica died mid-answer): one more request, so
        the client hears what the next request is told."""
        with anyio.fail_after(CALL_TIMEOUT_S):
            if self.agent.era != "2026":
                await self.client.send_ping()
            else:
                await self("Bash", {"command": "pwd"})


async def call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):
            return await client.call_tool(name, arguments)
    except MCPError as exc:
        raise SessionLost(str(exc)) from exc
    except TimeoutError as exc:
        raise SessionLost(f"no answer within {CALL_TIMEOUT_S} s") from exc
    except (httpx2.HTTPError, OSError) as exc:
        raise SessionLost(f"{type(exc).__name__}: {exc}") from exc


async def one_session(agent: Agent, url: str, progress: Progress, wrong: list[str]) -> None:
    """Open a session and make calls until the quota is met; SessionLost when the session goes away."""
    hooks = {"response": [_async_hook(agent.on_response)]}
    mode = "legacy" if agent.era == "2025" else "auto"  # 2025: sessions; auto negotiates 2026-07-28
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300), event_hooks=hooks) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        agent.sessions += 1
        caller = Caller(client, agent)
        if agent.era == "2026":
            with anyio.fail_after(CALL_TIMEOUT_S):
                await client.list_tools()  # the SDK mirrors x-mcp-header arguments of listed tools only
        try:
            await make_calls(agent, caller, progress, wrong)
        except SessionLost as lost:
            if CLEAR_LOSS.search(str(lost)):
                raise
            # A call in flight when its replica died ends with the SDK's own words ("SSE stream ended without
            # a response") or HAProxy's 502: nothing upstream can speak once the stream is cut. The next
            # request is answered.
            try:
                await caller.probe()
            except Exception as exc:
                raise SessionLost(f"{lost} | then: {exc}") from exc
            raise
        progress.finish(agent.index)
        await progress.all_done.wait()  # sessions stay open until the servers are measured


async def make_calls(agent: Agent, call: Caller, progress: Progress, wrong: list[str]) -> None:
    """The session's (2026: the state's) calls, until the client's quota is met."""
    step = 0
    job = ""
    first = await call("Bash", {"command": f"cd {agent.folder / 'sub'}"})
    agent.done += 1
    progress.tick(agent)
    if first.is_error:
        agent.errors.append(f"cd: {text_of(first)[:200]}")
    read = await call("Read", {"file_path": str(agent.file)})
    agent.done += 1
    progress.tick(agent)
    if read.is_error:
        agent.errors.append(f"Read: {text_of(read)[:200]}")
    elif agent.in_flight_edit:  # a new session after a lost one: whether the last Edit landed is in the file
        found = re.search(r"counter = (\d+)", text_of(read))
        agent.counter = int(found.group(1)) if found else agent.counter
        agent.in_flight_edit = False
    while agent.done < agent.quota:
        kind = step % 6
        if kind == 0:
            old, new = f"counter = {agent.counter}", f"counter = {agent.counter + 1}"
            agent.in_flight_edit = True
            edit = {"file_path": str(agent.file), "old_string": old, "new_string": new}
            result = await call("Edit", edit)
            agent.in_flight_edit = False
            if result.is_error:
                message = text_of(result)
                target = wrong if "has not been read" in message or "modified" in message else agent.errors
                target.append(f"Edit: {message[:200]}")
            else:
                agent.counter += 1
        elif kind == 1:
            result = await call("Grep", {"pattern": "^counter = ", "path": str(agent.folder), "output_mode": "content"})
            if result.is_error or f"counter = {agent.counter}" not in text_of(result):
                agent.errors.append(f"Grep: expected counter = {agent.counter}: {text_of(result)[:200]}")
        elif kind == 2:
            result = await call("Bash", {"command": "pwd"})
            if text_of(result).strip() != str(agent.folder / "sub"):
                wrong.append(f"pwd: {text_of(result)[:200]}")
        elif kind == 3:
            result = await call("Bash", {"command": f"echo job-{step}", "run_in_background": True})
            meta = (result.meta or {}).get("codetools/result", {})
            job = meta.get("backgroundTaskId", "")
            if result.is_error or not job:
                agent.errors.append(f"Bash background: {text_of(result)[:200]}")
        elif kind == 4:
            result = await call("BashOutput", {"bash_id": job or "bash_1"})
            if result.is_error:
                wrong.append(f"BashOutput {job}: {text_of(result)[:200]}")
        else:
            result = await call("Read", {"file_path": str(agent.file), "offset": LINES // 2, "limit": 3})
            if result.is_error or f"counter = {agent.counter}" not in text_of(result):
                agent.errors.append(f"Read: expected counter = {agent.counter}: {text_of(result)[:200]}")
        agent.done += 1
        step += 1
        progress.tick(agent)


def _async_hook(sync: Any) -> Any:
    async def hook(response: httpx2.Response) -> None:
        sync(response)

    return hook


class Progress:
    """Calls made across all clients; fires the kill at a given count and says when all are done."""

    def __init__(self, clients: int, kill_at: int | None) -> None:
        self.clients = clients
        self.finished: set[int] = set()
        self.count = 0
        self.kill_at = kill_at
        self.kill_now = anyio.Event()
        self.calls_done = anyio.Event()
        self.all_done = anyio.Event()

    def tick(self, agent: Agent) -> None:
        """One call made. The kill comes at half the calls, or when a client is halfway through its own (clients
        start unevenly: at half the total, the first may already be done, and see nothing of the kill)."""
        self.count += 1
        if self.kill_at is not None and (self.count >= self.kill_at or agent.done >= agent.quota // 2):
            self.kill_now.set()

    def finish(self, index: int) -> None:
        self.finished.add(index)
        if len(self.finished) == self.clients:
            self.calls_done.set()


async def run_agent(agent: Agent, url: str, progress: Progress, wrong: list[str]) -> None:
    """The client's sessions (2026: states), a new one after each lost one, until its quota is met."""
    while True:
        try:
            await one_session(agent, url, progress, wrong)
            break
        except Exception as exc:  # the session is gone, whichever way the client found out
            leaves = _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
            lost = next((leaf for leaf in leaves if isinstance(leaf, SessionLost)), leaves[0])
            told = str(lost) if isinstance(lost, SessionLost) else f"{type(lost).__name__}: {lost}"
            if agent.session_id and not CLEAR_LOSS.search(told):
                told += f" | then: {await hear_loss(agent, url)}"
            agent.lost.append(told)
            if agent.done >= agent.quota:
                break
        if len(agent.lost) > 3:
            agent.errors.append("gave up after 4 lost sessions")
            break
    progress.finish(agent.index)


async def hear_loss(agent: Agent, url: str) -> str:
    """What the next request with the lost session's (2026: state's) id is told, sent afresh: the transport
    error that ended the client (its replica dropped the connection) said nothing about the state."""
    if agent.era == "2025":
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-session-id": agent.session_id or "",
            "mcp-protocol-version": "2025-11-25",
        }
        try:
            async with httpx2.AsyncClient(timeout=CALL_TIMEOUT_S) as http:
                answer = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            return str(answer.json().get("error", {}).get("message", answer.text))
        except (httpx2.HTTPError, OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
    try:
        async with Client(url) as client:
            with anyio.fail_after(CALL_TIMEOUT_S):
                await client.list_tools()
            caller = Caller(client, agent)
            caller.state_id = agent.session_id
            await caller("Bash", {"command": "pwd"})
    except Exception as exc:
        leaves = _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
        return "; ".join(f"{leaf}" for leaf in leaves)
    return "(the state was still served)"


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    """The exceptions inside a (nested) group, which is how a task group hands on the one that ended it."""
    out: list[BaseException] = []
    for exc in group.exceptions:
        out += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return out


def cpu_s(pid: int) -> float | None:
    """User + system CPU of a process and its reaped children (Bash commands), from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def run(
    label: str,
    running: lb.Cluster,
    clients: int,
    calls: int,
    workdir: Path,
    kill: bool,
    control: bool = False,
    era: str = "2025",
) -> tuple[Outcome, list[Agent]]:
    outcome = Outcome(label, len(running.replicas), clients, era)
    quota = [calls // clients + (1 if i < calls % clients else 0) for i in range(clients)]
    agents = [Agent(i, workdir, quota[i], era) for i in range(clients)]
    progress = Progress(clients, calls // 2 if kill else None)
    wrong: list[str] = []
    outcome.pids = running.pids()
    pids = [r.pid for r in running.replicas]
    cpu_before = [cpu_s(p) for p in pids]
    lb_before = cpu_s(running.haproxy.pid) if running.haproxy else None
    client_before = resource.getrusage(resource.RUSAGE_SELF)
    victim_sessions: set[int] = set()
    cut: set[int] = set()
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for agent in agents:
            tg.start_soon(run_agent, agent, running.url, progress, wrong)
        if kill:
            await progress.kill_now.wait()
            # Among clients with calls to come that need the replica: one whose call in flight is its last (or
            # is followed only by a Grep, which needs no state) would see nothing. Likelier in a tiny run.
            by_replica = Counter(a.replica() for a in agents if a.replica() and a.done <= a.quota - KILL_MARGIN)
            by_replica = by_replica or Counter(a.replica() for a in agents if a.replica())
            victim_name = by_replica.most_common(1)[0][0]
            victim = next(r for r in running.replicas if r.name == victim_name)
            victim_sessions = {
                a.index for a in agents if a.replica() == victim_name and a.done <= a.quota - KILL_MARGIN
            }
            cut = {a.index for a in agents if a.index in victim_sessions and a.in_flight_edit}
            victim.kill()
            outcome.killed = f"{victim_name} after {progress.count} of {calls} calls"
        await progress.calls_done.wait()
        outcome.seconds = time.perf_counter() - start
        live = [r for r in running.replicas if r.proc.returncode is None]
        outcome.replica_rss_mib = [round(rss_mib(r.pid), 1) for r in live]
        cpu_after = [cpu_s(p) for p in pids]
        pairs = [(a, b) for a, b in zip(cpu_before, cpu_after, strict=True) if a is not None and b is not None]
        outcome.server_cpu_s = sum(b - a for a, b in pairs) if pairs and not kill else None
        if running.haproxy and lb_before is not None:
            after = cpu_s(running.haproxy.pid)
            outcome.haproxy_cpu_s = after - lb_before if after is not None else None
        client_after = resource.getrusage(resource.RUSAGE_SELF)
        outcome.client_cpu_s = (client_after.ru_utime + client_after.ru_stime) - (
            client_before.ru_utime + client_before.ru_stime
        )
        progress.all_done.set()
    outcome.calls = sum(a.done for a in agents)
    outcome.wrong_replica = wrong
    outcome.switched_sessions = sum(1 for a in agents for seen in a.replica_of.values() if len(seen) > 1)
    first_replica = Counter(sorted(seen)[0] for a in agents for seen in a.replica_of.values() if seen)
    outcome.sessions_per_replica = dict(sorted(first_replica.items()))
    for agent in agents:
        if agent.index in victim_sessions:
            outcome.affected_saw += agent.lost[:1]
            outcome.other_errors += agent.errors
        else:
            outcome.unaffected_errors += agent.errors + [f"lost: {m}" for m in agent.lost]
        outcome.restarted_sessions += max(0, agent.sessions - 1)
    outcome.affected_clients = len(victim_sessions)
    if not kill:
        outcome.other_errors = [e for e in outcome.unaffected_errors if not e.startswith("lost: ")]
        lost = [e for e in outcome.unaffected_errors if e.startswith("lost: ")]
        # A session lost without a kill means a request reached a replica that never opened it; a 2026 call
        # answered "wrong replica" (or "no state") says so itself.
        misrouted = [e for e in lost if control or MISROUTED.search(e)]
        outcome.wrong_replica += misrouted
        outcome.other_errors += [e for e in lost if e not in misrouted]
        outcome.unaffected_errors = []
    outcome.ok = outcome.calls - len(wrong) - len(outcome.other_errors) - len(outcome.unaffected_errors)
    check_files(outcome, agents, cut if kill else set())
    return outcome, agents


def check_files(outcome: Outcome, agents: list[Agent], cut: set[int]) -> None:
    """Every file is one of the versions an Edit could leave (old or new counter), whole; no temp file left
    but those of an Edit the kill cut (`cut`: clients whose Edit was in flight on the killed replica)."""
    for agent in agents:
        outcome.files_checked += 1
        text = agent.file.read_text(encoding="utf-8")
        if text in (initial_text(agent.tag, agent.counter), initial_text(agent.tag, agent.counter + 1)):
            outcome.files_whole += 1
        if agent.index in cut:  # as the file's next write, a minute on, sweeps a dead writer's temp file
            folder = os.open(agent.folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                later = time.time() + writes.STALE_AFTER_S + 1
                outcome.cut_write_debris += writes.sweep_stale_temps(agent.file.name, folder, now=later)
            finally:
                os.close(folder)
        outcome.temp_files_left += [p.name for p in agent.folder.iterdir() if re.match(r"\..*\.tmp$", p.name)]


def verdict(outcome: Outcome, kill: bool, control: bool = False) -> list[str]:
    """What failed, in words (empty: every check held)."""
    if control:  # without stickiness state must land on the wrong replica, or the checks could not see it
        return [] if outcome.wrong_replica else [f"{outcome.label}: no wrong-replica error seen: the checks are blind"]
    problems = []
    if outcome.wrong_replica:
        problems.append(f"{outcome.label}: {len(outcome.wrong_replica)} errors from state on the wrong replica")
    if outcome.switched_sessions:
        problems.append(f"{outcome.label}: {outcome.switched_sessions} sessions served by two replicas")
    if outcome.other_errors and not kill:
        problems.append(f"{outcome.label}: {len(outcome.other_errors)} other errors: {outcome.other_errors[:3]}")
    if outcome.files_whole != outcome.files_checked or outcome.temp_files_left:
        problems.append(f"{outcome.label}: files not whole or temp files left: {outcome.temp_files_left[:5]}")
    if kill:
        if outcome.unaffected_errors:
            problems.append(f"{outcome.label}: clients of live replicas saw errors: {outcome.unaffected_errors[:3]}")
        unclear = [m for m in outcome.affected_saw if not CLEAR_LOSS.search(m)]
        if unclear or len(outcome.affected_saw) != outcome.affected_clients:
            problems.append(f"{outcome.label}: the killed replica's clients were not told clearly: {unclear[:3]}")
    return problems


def table(outcomes: list[Outcome]) -> str:
    """The runs as a Markdown table; throughput compared with the one-process run of the same era."""
    rows = [
        "| run | replicas | clients | calls | wall (s) | calls/s | vs one process | wrong-replica errors |"
        " other errors | server CPU/call (ms) | HAProxy CPU/call (ms) | client CPU/call (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    baselines = {o.era: o for o in reversed(outcomes) if o.replicas == 1}
    for o in outcomes:
        baseline = baselines.get(o.era)  # none with --no-baseline
        ratio = f"{o.calls_per_s / baseline.calls_per_s:.2f}×" if baseline and baseline.calls_per_s else "n/a"
        server = f"{o.server_cpu_s * 1000 / o.calls:.2f}" if o.server_cpu_s is not None and o.calls else "n/a"
        haproxy = f"{o.haproxy_cpu_s * 1000 / o.calls:.3f}" if o.haproxy_cpu_s is not None and o.calls else "n/a"
        rows.append(
            f"| {o.label} | {o.replicas} | {o.clients} | {o.calls} | {o.seconds:.2f} | {o.calls_per_s:.0f} |"
            f" {ratio} | {len(o.wrong_replica)} | {len(o.other_errors) + len(o.unaffected_errors)} |"
            f" {server} | {haproxy} | {o.client_cpu_s * 1000 / max(o.calls, 1):.2f} |"
        )
    return "\n".join(rows)


async def main_async(args: argparse.Namespace, workdir: Path) -> tuple[list[Outcome], list[str]]:
    outcomes: list[Outcome] = []
    problems: list[str] = []
    root = workdir / "root"
    env = {"MCP_CODETOOLS_SANDBOX": "0"} if args.no_sandbox else None
    plan: list[tuple[str, str, int, bool, bool, bool]] = []
    for era in args.eras:
        routing = "stickiness" if era == "2025" else "handle routing"
        if not args.no_baseline:
            plan += [(era, f"{era}: one process, no balancer", 1, False, False, False)]
        plan += [(era, f"{era}: {args.replicas} replicas + HAProxy", args.replicas, True, False, False)]
        if not args.no_kill:
            label = f"{era}: {args.replicas} replicas + HAProxy, one killed mid-run"
            plan += [(era, label, args.replicas, True, True, False)]
        if not args.no_control:
            label = f"{era} control: {args.replicas} replicas + HAProxy without {routing}"
            plan += [(era, label, args.replicas, True, False, True)]
    groups: list[list[tuple[str, str, int, bool, bool, bool]]] = []
    for entry in plan:  # with --reuse-replicas, runs on like clusters share one; a kill run goes last in it
        kill = entry[4]
        same = [
            g for g in groups if args.reuse_replicas and g[0][2:4] + g[0][5:] == entry[2:4] + entry[5:]
            and not (kill and any(e[4] for e in g))
        ]  # fmt: skip
        if same:
            same[0].append(entry)
            same[0].sort(key=lambda e: e[4])  # stable: the others keep the plan's order before the kill
        else:
            groups.append([entry])
    done: dict[str, tuple[Outcome, list[str]]] = {}
    root.mkdir(parents=True)  # the replicas' root and working directory
    for group in groups:
        _, _, n, balancer, _, control = group[0]
        with lb.cluster(n, root, balancer=balancer, sticky=not control, env=env) as running:
            for era, label, _, _, kill, _ in group:
                folder = root / re.sub(r"\W+", "-", label)
                folder.mkdir(parents=True)
                print(f"… {label}", file=sys.stderr, flush=True)
                with anyio.fail_after(args.time_limit):
                    outcome, _ = await run(label, running, args.clients, args.calls, folder, kill, control, era)
                done[label] = (outcome, verdict(outcome, kill, control))
                print(f"  {outcome.calls} calls in {outcome.seconds:.2f} s", file=sys.stderr, flush=True)
    for entry in plan:  # reported in the plan's order
        outcome, found = done[entry[1]]
        outcomes.append(outcome)
        problems += found
    return outcomes, problems


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--calls", type=int, default=1000, help="calls per run, spread over the clients")
    parser.add_argument("--no-kill", action="store_true", help="leave out the run that kills a replica")
    parser.add_argument("--no-control", action="store_true", help="leave out the runs without stickiness")
    parser.add_argument(
        "--no-baseline", action="store_true", help="leave out the one-process runs (no throughput ratio then)"
    )
    parser.add_argument(
        "--reuse-replicas",
        action="store_true",
        help="runs on like clusters share their replicas, a run that kills one coming last (fewer starts;"
        " later runs find them warm)",
    )
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="replicas run Bash without the sandbox (a check of routing only: a sandboxed Bash call costs more)",
    )
    parser.add_argument(
        "--eras",
        type=_eras,
        default=ERAS,
        help="comma-separated protocol eras to run: 2025 (sessions), 2026 (state handles); default both",
    )
    parser.add_argument("--time-limit", type=float, default=300, help="seconds one run may take")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON on stdout")
    return parser


def _eras(text: str) -> tuple[str, ...]:
    eras = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not eras or set(eras) - set(ERAS):
        raise argparse.ArgumentTypeError(f"eras are {', '.join(ERAS)}, comma-separated (got {text!r})")
    return eras


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if shutil.which("haproxy") is None:
        print("benchmarks.scale: haproxy is not installed (Debian: apt-get install haproxy)", file=sys.stderr)
        return 2
    lb.install_stop_handler()
    workdir = Path(tempfile.mkdtemp(prefix="mcp-scale-"))
    try:
        outcomes, problems = anyio.run(main_async, args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        report = [asdict(o) | {"calls_per_s": o.calls_per_s} for o in outcomes]
        print(json.dumps({"outcomes": report, "problems": problems}, indent=1))
    else:
        print(table(outcomes))
        for o in outcomes:
            if o.killed:
                print(f"\nkilled {o.killed}; {o.affected_clients} clients on it; they were told:")
                for message in sorted(set(o.affected_saw)):
                    print(f"  - {message}")
                print(f"sessions started again: {o.restarted_sessions}; files whole: {o.files_whole}/{o.files_checked}")
                if o.cut_write_debris:
                    print(f"temp files of Edits the kill cut, swept as their next write would: {o.cut_write_debris}")
            print(f"{o.label}: sessions per replica {o.sessions_per_replica}, replica RSS MiB {o.replica_rss_mib}")
        print("\n" + ("all checks held" if not problems else "FAILED:\n" + "\n".join(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
