"""Developer scripts, test servers and benchmarks. A package only so that tests can import
what the benchmarks and the tests share (deploy/bench/history.py); nothing here imports
tests/."""
