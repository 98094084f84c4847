"""Small helpers shared by the tests."""

from __future__ import annotations


def record(**overrides: object) -> dict[str, object]:
    """A valid put() argument set; override any field."""
    values: dict[str, object] = dict(
        tenant="team-a",
        record_id="r1",
        revision="v1",
        kind="runbook",
        body="restart the queue consumer",
        source="runbook://queue/v1",
        expires_at=1000,
    )
    values.update(overrides)
    return values


def tamper(path: object, *statements: str) -> None:
    """Runs ``statements`` on the store's file the way someone with the file and no
    respect for the rules would: pyevidence's guard triggers are dropped, the
    statements run, and the triggers are put back with their exact text, so the
    store opens again as if nothing had happened."""
    import sqlite3

    conn = sqlite3.connect(str(path))
    try:
        triggers = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'").fetchall()
        conn.execute("BEGIN")
        for name, _ in triggers:
            conn.execute(f'DROP TRIGGER "{name}"')
        for statement in statements:
            conn.execute(statement)
        for _, sql in triggers:
            conn.execute(sql)
        conn.execute("COMMIT")
    finally:
        conn.close()
