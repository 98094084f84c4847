"""The token index (schema.sql, "The token index"; docs/index.md)."""
