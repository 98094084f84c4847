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
