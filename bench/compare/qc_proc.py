"""CPU time of process trees from /proc (Linux), for bench/queue_compare.py.

`tree_cpu(root)`: user + system seconds of a root process and its live descendants, plus
the root's children-that-exited (cutime + cstime: a gunicorn worker that was replaced, a
PostgreSQL backend that closed). The difference of two snapshots is the CPU the tree spent
between them. `postgres_cpu()` does the same for every postgres process (the postmaster's
tree); `backends_cpu(pids)` for given backends only.
"""
from __future__ import annotations

import os

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, list[str]] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # the command may hold spaces and parentheses: split after the last ")"
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), rest  # ppid, fields from "state" on


def _own(rest: list[str]) -> float:
    return (int(rest[11]) + int(rest[12])) / TICK  # utime, stime


def _children_exited(rest: list[str]) -> float:
    return (int(rest[13]) + int(rest[14])) / TICK  # cutime, cstime


def processes() -> dict[int, tuple[int, list[str]]]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                table[int(name)] = stat
    return table


def tree_cpu(root: int, table: dict | None = None) -> float:
    """CPU seconds of root's tree (live descendants + exited children of every member)."""
    table = table if table is not None else processes()
    if root not in table:
        return 0.0
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        rest = table[pid][1]
        total += _own(rest) + _children_exited(rest)
        todo.extend(children.get(pid, []))
    return total


def postmaster_pid(table: dict | None = None) -> int | None:
    """The oldest process named postgres whose parent is not postgres."""
    table = table if table is not None else processes()
    names = {}
    for pid in table:
        try:
            with open(f"/proc/{pid}/comm") as f:
                names[pid] = f.read().strip()
        except OSError:
            pass
    roots = [pid for pid, name in names.items() if name == "postgres" and names.get(table[pid][0]) != "postgres"]
    return min(roots) if roots else None


def backends_cpu(pids, table: dict | None = None) -> dict[int, float]:
    table = table if table is not None else processes()
    return {pid: _own(table[pid][1]) for pid in pids if pid in table}
