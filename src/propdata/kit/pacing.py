"""A background job that gives way to the rest of the machine: between its steps it looks at
how much CPU other processes used since the last step and, while they are busy, sleeps so
it takes no more than a bounded share of a core (a duty cycle).

    pacer = Pacer.of_this_machine(Pace(quiet_cores=0.25, share=0.5, floor_cores=0.1))
    for step in steps:
        work(step)
        await pacer.between()   # returns at once while the machine is otherwise quiet

"Other work" is the machine's busy CPU time (/proc/stat's first line) less this process's
own (`os.times()`, all its threads) and that of processes working for it (`count_as_own`: a
PostgreSQL backend running its reads, when on this machine). That is what a sleeping job changes: a CPU-bound
neighbour shows there at once. /proc/pressure/cpu does not serve: it counts only time a
task waits for a core, so one busy neighbour on two cores reads as no pressure while a
SCHED_IDLE job's own waiting reads as pressure. Where /proc/stat is missing (not Linux)
there is no pacer and the job runs unpaced.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
SPAN = 0.1
"""Seconds a step's counts must cover before they are judged: the kernel counts CPU time in
ticks of 10 ms, so a shorter span's figures are mostly rounding; its counts go on to the
next step's."""


@dataclass(frozen=True)
class Pace:
    """How a job yields: the bounds of `pause`."""

    quiet_cores: float
    """Other work below this many cores' worth is no reason to pause."""
    share: float
    """While others are busy, the job takes at most this share of the cores they leave..."""
    floor_cores: float
    """... but never less than this many cores, so the job always ends."""


def pause(pace: Pace, wall: float, own: float, others: float, cores: int) -> float:
    """Seconds to sleep after an interval of `wall` seconds in which this job used `own`
    CPU seconds and other processes `others`, on a machine of `cores`: none while the others
    used less than `pace.quiet_cores`; else enough that the job's CPU over the interval and
    the sleep is at most `pace.share` of the cores the others left, and at least
    `pace.floor_cores`."""
    if wall <= 0 or others < pace.quiet_cores * wall:
        return 0.0
    spare = max(0.0, cores - others / wall)
    allowed = max(pace.floor_cores, pace.share * spare)
    return max(0.0, own / allowed - wall)


def _machine_busy(path: Path) -> float:
    """The machine's busy CPU seconds since boot, all cores: user, nice, system, irq,
    softirq and steal of /proc/stat's "cpu" line (idle and iowait left out)."""
    with path.open() as f:
        fields = [int(v) for v in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own() -> float:
    t = os.times()
    return t.user + t.system


def _process_cpu(pid: int, proc: Path) -> float | None:
    """A process's CPU seconds (user and system, /proc/PID/stat), or None if it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _process_name(pid: int, proc: Path) -> str | None:
    try:
        return (proc / str(pid) / "comm").read_text().strip()
    except OSError:
        return None


class Pacer:
    """Counts since its last step; `between` sleeps as `pause` says. `steps`, `pauses` and
    `slept` say how often it looked, how often and how long it gave way."""

    def __init__(self, pace: Pace, stat: Path = PROC_STAT, cores: int | None = None) -> None:
        self.pace, self._stat = pace, stat
        self._proc = stat.parent
        self.cores = cores or os.cpu_count() or 1
        self.steps = 0
        self.pauses = 0
        self.slept = 0.0
        self._helpers: dict[int, tuple[float, float]] = {}
        """pid -> (its CPU when counted from, its CPU when last read)."""
        self._mark = self._read()

    @classmethod
    def of_this_machine(cls, pace: Pace, stat: Path = PROC_STAT) -> Pacer | None:
        """A pacer reading /proc/stat, or None where there is none (not Linux)."""
        try:
            return cls(pace, stat)
        except (OSError, ValueError):
            return None

    def count_as_own(self, pid: int, name: str) -> bool:
        """Count the CPU that process `pid` uses from now on as this job's own, not as other
        work, if it runs on this machine under a name starting with `name` (a pid of another
        machine's process may be some unrelated process here). True if it is counted. A
        process that ends keeps its last reading."""
        if not (_process_name(pid, self._proc) or "").startswith(name):
            return False
        cpu = _process_cpu(pid, self._proc)
        if cpu is None:
            return False
        self._helpers[pid] = (cpu, cpu)
        return True

    @property
    def counted(self) -> frozenset[int]:
        """The processes whose CPU counts as this job's (`count_as_own`)."""
        return frozenset(self._helpers)

    def own(self) -> float:
        """This job's CPU seconds: this process's, and its helpers' since they were counted."""
        total = _own()
        for pid, (start, last) in self._helpers.items():
            cpu = _process_cpu(pid, self._proc)
            if cpu is not None and cpu >= last:
                self._helpers[pid] = (start, cpu)
                last = cpu
            total += last - start
        return total

    def _read(self) -> tuple[float, float, float]:
        return time.monotonic(), _machine_busy(self._stat), self.own()

    def due(self) -> float:
        """Seconds to sleep now, by the work since the last judged step (at least SPAN ago;
        else none, and the counts go on)."""
        then, mark = self._mark, self._read()
        wall, busy, own = mark[0] - then[0], mark[1] - then[1], mark[2] - then[2]
        if wall < SPAN:
            return 0.0
        self._mark = mark
        return pause(self.pace, wall, own, max(0.0, busy - own), self.cores)

    async def between(self) -> None:
        """Sleep as long as `due` says (not at all on a quiet machine)."""
        seconds = self.due()
        self.steps += 1
        if seconds > 0:
            self.pauses += 1
            self.slept += seconds
            await asyncio.sleep(seconds)
