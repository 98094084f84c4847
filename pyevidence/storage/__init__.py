"""The database: the schema and its migrations, the path rule, versions, and the two engines.

See docs/architecture.md: imports core/ and ranking/ only.
"""
