"""The repository's past commits most like an edit's instruction (`similar_commits`): of its last commits,
the ten whose subject lines read most like the instruction (TF-IDF cosine over their words), and how many
more of them than of all its commits were hard (`SimilarCommits.lift`, one of the router's inputs).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tandem.completion.routing.file_history import PastCommit

__all__ = ["PATH_LIKE", "SIMILAR_NEIGHBOURS", "SIMILAR_PRIOR", "SimilarCommits", "similar_commits"]

# A file path or dotted name in an instruction ("Delete scripts/migrate-black.py"): its words are not scope
# words ('migrate').
PATH_LIKE = re.compile(r"\S*(?:/|\w\.[A-Za-z])\S*")

# The past commits compared with an instruction: the most similar this many, and their hard share shrunk
# towards the repository's as if this much more similarity were the repository's average commit.
SIMILAR_NEIGHBOURS = 10
SIMILAR_PRIOR = 2.0
_WORD = re.compile(r"[a-z][a-z0-9]+")


@dataclass(frozen=True, kw_only=True)
class SimilarCommits:
    """The repository's past commits most like an instruction, as counts (`similar_commits`)."""

    # Past commits read, and of them those hard by the label about code.
    commits: int = 0
    hard: int = 0
    # The most similar (at most `SIMILAR_NEIGHBOURS`, each sharing a word with the instruction) ...
    neighbours: int = 0
    neighbours_hard: int = 0
    # ... their summed cosine similarity, and that of the hard ones.
    similarity: float = 0.0
    hard_similarity: float = 0.0

    def base(self) -> float:
        """The repository's hard share (shrunk towards 1/2 by one commit of each kind)."""
        return (self.hard + 1) / (self.commits + 2)

    def lift(self) -> float:
        """The similarity-weighted hard share of the neighbours, shrunk towards the repository's by
        `SIMILAR_PRIOR`, less the repository's: 0 when nothing is like the instruction."""
        base = self.base()
        return (self.hard_similarity + SIMILAR_PRIOR * base) / (self.similarity + SIMILAR_PRIOR) - base


def _words(text: str) -> Counter[str]:
    """Words of an instruction or commit subject (of 3+ characters; file paths and dotted names left out)."""
    return Counter(w for w in _WORD.findall(PATH_LIKE.sub(" ", text).lower()) if len(w) >= 3)


def similar_commits(instruction: str, past: Sequence[PastCommit]) -> SimilarCommits:
    """The past commits (newest first) most like `instruction` by TF-IDF cosine similarity of their subject
    lines' words, the word weights from those same subjects (a word in every subject says nothing)."""
    docs = [_words(c.subject) for c in past]
    n = len(docs)
    df = Counter(word for doc in docs for word in doc)

    def unit(doc: Counter[str]) -> dict[str, float]:
        weights = {w: (1 + math.log(k)) * math.log((n + 1) / (df[w] + 1)) for w, k in doc.items()}
        norm = math.sqrt(sum(v * v for v in weights.values()))
        return {w: v / norm for w, v in weights.items()} if norm else {}

    query = unit(_words(instruction))
    sims = [sum(query.get(w, 0.0) * v for w, v in unit(doc).items()) if query.keys() & doc.keys() else 0.0
            for doc in docs]  # fmt: skip
    nearest = sorted((i for i in range(n) if sims[i] > 0), key=lambda i: (-sims[i], i))[:SIMILAR_NEIGHBOURS]
    return SimilarCommits(
        commits=n,
        hard=sum(c.hard for c in past),
        neighbours=len(nearest),
        neighbours_hard=sum(past[i].hard for i in nearest),
        similarity=sum(sims[i] for i in nearest),
        hard_similarity=sum(sims[i] for i in nearest if past[i].hard),
    )
