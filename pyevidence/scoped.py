"""A store handle bound to one tenant: the deployment boundary for agents.

The tenant must come from the caller's authenticated identity, never from text
a model produced. A ScopedStore is made once, where the identity is known, and
handed to the code that acts on model output: none of its methods takes a
tenant, so no argument can reach another tenant's records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import validation
from .errors import ValidationError
from .records import Retrieval, Verification, Version, VersionLookup
from .scoring import Scorer, SetRanker
from .vector_scoring import InStoreRanker

if TYPE_CHECKING:
    from .store import EvidenceStore


class ScopedStore:
    """put / put_many / retrieve / forget / history / get_version / verify of one
    tenant's records. Make it with
    ``EvidenceStore.scoped(tenant=...)``."""

    def __init__(self, store: EvidenceStore, tenant: str) -> None:
        self._store = store
        self._tenant = validation.text("tenant", tenant)

    @property
    def tenant(self) -> str:
        return self._tenant

    def put(
        self,
        *,
        record_id: str,
        revision: str,
        kind: str,
        body: str,
        source: str,
        expires_at: int,
        embedding: Sequence[float] | None = None,
    ) -> None:
        self._store.put(
            embedding=embedding,
            tenant=self._tenant,
            record_id=record_id,
            revision=revision,
            kind=kind,
            body=body,
            source=source,
            expires_at=expires_at,
        )

    def put_many(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        embeddings: Sequence[Sequence[float] | None] | None = None,
    ) -> int:
        """Like EvidenceStore.put_many, with records that carry no tenant at all."""
        if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
            raise ValidationError("records", "must be an iterable of records (mappings)")
        bound = []
        for index, item in enumerate(records):
            # A Record carries its own tenant, so only plain mappings are taken here.
            if not isinstance(item, Mapping):
                raise ValidationError(
                    f"records[{index}]", "must be a mapping of put()'s fields, without tenant"
                )
            if "tenant" in item:
                raise ValidationError(f"records[{index}]", "a scoped store takes no tenant field")
            bound.append({**item, "tenant": self._tenant})
        return self._store.put_many(bound, embeddings=embeddings)

    def retrieve(
        self,
        *,
        revision: str,
        query: str,
        now: int,
        limit: int = 5,
        scorer: Scorer | SetRanker | InStoreRanker | None = None,
    ) -> Retrieval:
        return self._store.retrieve(
            tenant=self._tenant, revision=revision, query=query, now=now, limit=limit, scorer=scorer
        )

    def forget(self, *, record_id: str) -> bool:
        return self._store.forget(tenant=self._tenant, record_id=record_id)

    def history(self, *, record_id: str) -> tuple[Version, ...]:
        return self._store.history(tenant=self._tenant, record_id=record_id)

    def get_version(self, *, record_id: str, version: str) -> VersionLookup:
        return self._store.get_version(tenant=self._tenant, record_id=record_id, version=version)

    def verify(self) -> Verification:
        return self._store.verify(tenant=self._tenant)
