"""Developer scripts, test servers and benchmarks. A package so that the benchmarks can
import each other and what they share with the tests (``tests/history.py``,
``tests/s3_helpers.py``); the service never imports it."""
