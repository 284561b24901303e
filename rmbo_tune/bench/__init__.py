"""Benchmark suite: problems, runners and reports (see README for the figures)."""
