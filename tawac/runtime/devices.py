"""Work spread over every local GPU: one worker process per device (`tawac tune`'s
timings, `tawac calibrate`'s measurements).

`per_device(fn, jobs, devices)` starts `devices` spawned processes (never a fork of a
process that may hold CUDA); worker `d` sets `CUDA_VISIBLE_DEVICES=d` before anything
imports torch, then runs `fn(job)` on jobs `d, d + devices, ...` in order and sends each
result back. Results come back in job order with the name of the device that produced
them; a job that raised gives its error text instead (the other jobs go on). `fn` and the
jobs must pickle (a module-level function, `functools.partial` of one, plain data).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def device_count() -> int:
    """The local CUDA devices torch sees (0 without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@dataclass(frozen=True)
class Outcome:
    """One job's result (`value`) or its error (`error`: "Type: message"), and the
    device that ran it."""

    index: int
    device: str
    value: Any = None
    error: str | None = None


def _device_name() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def _worker(device: int, fn: Callable[[Any], Any], jobs: list[tuple[int, Any]], queue) -> None:
    """Worker `device`: its jobs in order, each outcome on `queue`, then a final None."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    name = _device_name()
    for index, job in jobs:
        try:
            queue.put(Outcome(index, name, value=fn(job)))
        except Exception as e:  # reported with the job; the others go on
            queue.put(Outcome(index, name, error=f"{type(e).__name__}: {e}"))
    queue.put(None)


def per_device(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    devices: int,
    done: Callable[[Outcome], None] = lambda o: None,
) -> list[Outcome]:
    """`fn(job)` for every job, spread over `devices` worker processes (one per device,
    jobs dealt round-robin); `done` is called in the parent as each outcome arrives.
    Returns the outcomes in job order."""
    import multiprocessing as mp

    if devices < 1:
        raise ValueError(f"devices must be at least 1, got {devices}")
    indexed = list(enumerate(jobs))
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(d, fn, indexed[d::devices], queue))
        for d in range(min(devices, len(indexed)))
    ]
    for p in procs:
        p.start()
    out: dict[int, Outcome] = {}
    running = len(procs)
    while running:
        got = queue.get()
        if got is None:
            running -= 1
            continue
        out[got.index] = got
        done(got)
    for p in procs:
        p.join()
    lost = [i for i in range(len(indexed)) if i not in out]
    for i in lost:  # a worker that died (killed, out of memory) sends nothing more
        out[i] = Outcome(i, "?", error="the worker process ended before this job")
    return [out[i] for i in range(len(indexed))]


__all__ = ["Outcome", "device_count", "per_device"]
