"""The ways in: the command line, the demonstration, doctor, the MCP server, import and export.

See docs/architecture.md: they use the public API like any user would.
"""
