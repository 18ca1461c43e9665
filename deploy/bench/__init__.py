"""The benchmarks (deploy/bench/bench_all.py runs them all) and what they share with the
tests."""
