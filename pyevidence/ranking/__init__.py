"""Deciding the order of eligible records: scorers, the remote reranker, vector and hybrid ranking.

See docs/architecture.md: imports core/ only; it never opens a database.
"""
