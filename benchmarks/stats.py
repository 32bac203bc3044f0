"""Small statistics over timing samples (in seconds unless said otherwise)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentile(samples: Sequence[float], pct: float) -> float:
    """The `pct` percentile by the nearest-rank method (p99 of 300 samples is the 297th smallest)."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def summary(samples: Sequence[float], scale: float = 1000.0) -> dict[str, float]:
    """n, min, p50, p90, p99, max and mean, scaled (default: seconds to milliseconds)."""
    return {
        "n": len(samples),
        "min": min(samples) * scale,
        "p50": percentile(samples, 50) * scale,
        "p90": percentile(samples, 90) * scale,
        "p99": percentile(samples, 99) * scale,
        "max": max(samples) * scale,
        "mean": statistics.fmean(samples) * scale,
    }
