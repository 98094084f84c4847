"""pyevidence: a scoped evidence memory on SQLite.

Records are stored per tenant; retrieve() first selects only the caller's tenant,
revision and unexpired records, then ranks those by a scorer, and returns hits
with citations. See docs/guarantees.md for the guarantees and the limits.
"""

from .core.errors import (
    EngineFallbackWarning,
    EngineUnavailableError,
    EvidenceError,
    SchemaError,
    ScorerError,
    StoreError,
    ValidationError,
)
from .core.limits import Limits
from .core.records import (
    KINDS,
    Candidate,
    ChainBreak,
    Hit,
    IndexCheck,
    IndexProblem,
    IndexRebuild,
    QueryResult,
    Record,
    Retrieval,
    ScorerCost,
    Verification,
    Version,
    VersionLookup,
)
from .core.tokens import token_overlap, tokens
from .core.vectors import Embedder
from .core.version import __version__
from .loadable import load, loadable_path
from .ranking.remote import RemoteScorer
from .ranking.scoring import Scorer, SetRanker, TokenScorer
from .ranking.vector_scoring import HybridScorer, VectorScorer
from .store import EvidenceStore, ScopedStore, native_available

__all__ = [
    "KINDS",
    "Candidate",
    "ChainBreak",
    "Embedder",
    "EngineFallbackWarning",
    "EngineUnavailableError",
    "EvidenceError",
    "EvidenceStore",
    "Hit",
    "HybridScorer",
    "IndexCheck",
    "IndexProblem",
    "IndexRebuild",
    "Limits",
    "QueryResult",
    "Record",
    "RemoteScorer",
    "Retrieval",
    "SchemaError",
    "ScopedStore",
    "Scorer",
    "ScorerCost",
    "ScorerError",
    "SetRanker",
    "StoreError",
    "TokenScorer",
    "ValidationError",
    "VectorScorer",
    "Verification",
    "Version",
    "VersionLookup",
    "__version__",
    "load",
    "loadable_path",
    "native_available",
    "token_overlap",
    "tokens",
]
