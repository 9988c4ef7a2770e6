"""The benchmark: `retrylake bench` generates histories and measures builds on them."""

from retrylake.bench.measure import bench

__all__ = ["bench"]
