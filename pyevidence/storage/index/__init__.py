"""The token index (schema.sql, "The token index"; docs/token-index.md)."""
