"""A process and its descendants, read from ``/proc`` (Linux): their pids, resident memory
and CPU time. bench_all.py measures the service so: the service process with its export
workers, sampled while an export runs.
"""

from __future__ import annotations

import os
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
HZ = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/PID/stat`` after the command name (field 3 first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def tree(root: int) -> list[int]:
    """``root`` and all its live descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def tree_rss(root: int) -> tuple[int, int]:
    """(RSS of ``root``, RSS of ``root`` and all descendants), bytes."""
    own = total = 0
    for pid in tree(root):
        try:
            rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError):
            continue  # a worker that just ended
        total += rss
        own = rss if pid == root else own
    return own, total


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` (with the children it reaped) and of its live descendants."""
    seconds = 0.0
    for pid in tree(root):
        if (fields := _stat(pid)) is not None:
            ticks = fields[11:15] if pid == root else fields[11:13]  # utime stime [cu cs]
            seconds += sum(int(t) for t in ticks) / HZ
    return seconds
