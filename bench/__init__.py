"""Benchmarks for mem.net (not part of the test run). See docs/performance.md."""
