"""Side-by-side benchmarks: the same workload stock and patched."""
