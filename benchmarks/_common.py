"""Shared helpers for benchmarks: time each call, summarise, and print a table or one JSON object.

durations = time_each(work, items)
figures = {"pairs/s": rate(durations), **latency(durations)}
print(render("schema diff", figures, as_json=args.json))
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ["latency", "parser", "percentile", "rate", "render", "time_each"]

T = TypeVar("T")


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the flags every benchmark shares (``--json``)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    return p


def time_each(
    fn: Callable[[T], object], items: Iterable[T], *, clock: Callable[[], float] = time.perf_counter
) -> list[float]:
    """Seconds spent in ``fn(item)`` for each item, in order (no I/O inside the timing). ``clock`` is wall time
    by default; ``time.process_time`` counts this process's CPU only, steadier on a shared machine."""
    durations: list[float] = []
    for item in items:
        start = clock()
        fn(item)
        durations.append(clock() - start)
    return durations


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by the nearest-rank method.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.0
    """
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def rate(durations: Sequence[float]) -> float:
    """Items per second over the summed durations."""
    total = sum(durations)
    return len(durations) / total if total > 0 else math.inf


def latency(durations: Sequence[float], unit: str = "ms") -> dict[str, float]:
    """p50/p99/max of one item, in ``unit`` ("ms" or "us")."""
    scale = {"ms": 1e3, "us": 1e6}[unit]
    return {
        f"p50_{unit}": round(percentile(durations, 50) * scale, 3),
        f"p99_{unit}": round(percentile(durations, 99) * scale, 3),
        f"max_{unit}": round(max(durations) * scale, 3),
    }


def render(title: str, figures: dict[str, Any], *, as_json: bool) -> str:
    """Figures as one JSON object (``--json``) or as an aligned two-column table under a title."""
    if as_json:
        return json.dumps({"benchmark": title, **figures}, sort_keys=False)
    width = max(len(k) for k in figures)
    lines = [title, "-" * len(title)]
    for key, value in figures.items():
        shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
        lines.append(f"{key.ljust(width)}  {shown}")
    return "\n".join(lines)
