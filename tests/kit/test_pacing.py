"""A paced job's rule (how long it sleeps for the CPU others used) and its reading of the
machine: on a quiet one it never sleeps; beside processes spinning on every core it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from propdata.kit.pacing import Pace, Pacer, pause

PACE = Pace(quiet_cores=0.25, share=0.5, floor_cores=0.1)


@pytest.mark.parametrize(
    ("wall", "own", "others", "cores", "expected"),
    [
        (1.0, 0.9, 0.0, 2, 0.0),  # nobody else: run flat out
        (1.0, 0.9, 0.2, 2, 0.0),  # daemons, an idle server: below the quiet bound
        (1.0, 1.6, 0.24, 2, 0.0),  # the job's own threads past a core: still no one else
        (1.0, 0.5, 1.0, 2, 0.0),  # half of the one core left is what it took
        (1.0, 0.9, 1.0, 2, 0.8),  # 0.9 s at 0.5 cores: 1.8 s in all
        (1.0, 0.5, 1.8, 2, 4.0),  # 0.1 core left, half of it under the floor: 0.1 core
        (1.0, 0.5, 2.4, 2, 4.0),  # others past the machine (a coarse count): the floor
        (2.0, 0.1, 3.0, 2, 0.0),  # 0.1 s in 2 s is already under the floor
        (1.0, 0.5, 1.0, 4, 0.0),  # three cores left on four: it may take 1.5
        (0.0, 0.0, 0.0, 2, 0.0),  # no time passed
    ],
)
def test_the_sleep_holds_the_job_to_its_share_of_what_others_leave(
    wall: float, own: float, others: float, cores: int, expected: float
) -> None:
    assert pause(PACE, wall, own, others, cores) == pytest.approx(expected)


def test_a_job_sleeping_as_told_takes_at_most_its_share() -> None:
    for own, others in ((0.3, 1.9), (1.2, 1.0), (0.05, 0.5)):
        slept = pause(PACE, 1.0, own, others, 2)
        allowed = max(PACE.floor_cores, PACE.share * (2 - others))
        assert own / (1.0 + slept) <= allowed + 1e-9


def _burn(seconds: float) -> None:
    """Use this much of this process's CPU."""
    start = sum(os.times()[:2])
    while sum(os.times()[:2]) - start < seconds:
        sum(range(10_000))


def test_where_the_machine_has_no_proc_stat_there_is_no_pacer(tmp_path: Path) -> None:
    assert Pacer.of_this_machine(PACE, tmp_path / "stat") is None
    assert Pacer.of_this_machine(PACE) is not None  # this Linux's


async def test_on_a_quiet_machine_it_never_sleeps(tmp_path: Path) -> None:
    """A /proc/stat whose counters stand still: no one else used the CPU, whatever this
    process did."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 900 1 0 2 0 0 0\ncpu0 50 0 25 450 1 0 1 0 0 0\n")
    pacer = Pacer(PACE, stat, cores=2)
    for _ in range(3):
        _burn(0.05)
        await pacer.between()
    assert (pacer.steps, pacer.pauses, pacer.slept) == (3, 0, 0.0)


async def test_beside_processes_busy_on_every_core_it_sleeps(spinning: None) -> None:
    """0.2 s of this process's CPU, taken while the spinners held the cores, is more than a
    tenth of a core over the time it took: it sleeps the rest."""
    pacer = Pacer(PACE)
    _burn(0.2)
    await pacer.between()
    assert pacer.pauses == 1
    assert pacer.slept > 0


_HELPER = """
import os, sys
print("ready", flush=True)
sys.stdin.readline()
start = sum(os.times()[:2])
while sum(os.times()[:2]) - start < 0.3:
    sum(range(10_000))
print("spent", flush=True)
sys.stdin.read()
"""


def test_a_process_working_for_the_job_counts_as_its_own_cpu() -> None:
    """As a PostgreSQL backend running an export's reads: its CPU from when it is counted
    on is the job's, not other work; a process of another name is not counted."""
    with subprocess.Popen([sys.executable, "-c", _HELPER], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as helper:  # fmt: skip
        assert helper.stdin is not None and helper.stdout is not None
        try:
            assert helper.stdout.readline() == "ready\n"  # named python's from here on
            pacer = Pacer(PACE)
            assert not pacer.count_as_own(helper.pid, "postgres")
            assert pacer.count_as_own(helper.pid, "python")
            before = pacer.own()
            helper.stdin.write("go\n")
            helper.stdin.flush()
            assert helper.stdout.readline() == "spent\n"
            assert pacer.own() - before >= 0.25  # its 0.3 s, less a tick of rounding
            assert not pacer.count_as_own(2**22 + 1, "python")  # no such process
        finally:
            helper.kill()
