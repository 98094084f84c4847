"""Kept where pyevidence 0.3.0 documented it: ``pyevidence.embeddings.minilm()``.

The local embedding model lives in pyevidence/ranking/embeddings.py with the other ranking
providers; this module only re-exports its public name.
"""

from .ranking.embeddings import minilm

__all__ = ["minilm"]
