"""The rules, with no I/O: value types, errors, limits, the token rule, hashing, vectors, validation, JSON.

See docs/architecture.md: nothing here imports pyevidence outside core/.
"""
