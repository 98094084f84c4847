"""pyevidence: a scoped evidence memory on SQLite.

Records are stored per tenant; retrieve() first selects only the caller's tenant,
revision and unexpired records, then ranks those by a scorer, and returns hits
with citations. See docs/guarantees.md for the guarantees and the limits.
"""

from .errors import (
    EngineUnavailableError,
    EvidenceError,
    SchemaError,
    ScorerError,
    StoreError,
    ValidationError,
)
from .limits import Limits
from .loadable import load, loadable_path
from .records import (
    KINDS,
    Candidate,
    ChainBreak,
    Hit,
    QueryResult,
    Record,
    Retrieval,
    ScorerCost,
    Verification,
    Version,
    VersionLookup,
)
from .remote import RemoteScorer
from .scoped import ScopedStore
from .scoring import Scorer, SetRanker, TokenScorer
from .store import EvidenceStore, native_available
from .tokens import token_overlap
from .vector_scoring import HybridScorer, VectorScorer
from .vectors import Embedder

__version__ = "0.3.0"

__all__ = [
    "KINDS",
    "Candidate",
    "ChainBreak",
    "Embedder",
    "EngineUnavailableError",
    "EvidenceError",
    "EvidenceStore",
    "Hit",
    "HybridScorer",
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
]
