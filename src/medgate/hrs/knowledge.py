"""Knowledge injected into a prompt, and where it came from."""

from __future__ import annotations

from pydantic import Field

from medgate.records import Record


class Fact(Record):
    """One statement added to the knowledge block, with its provenance."""

    text: str
    source: str = Field(
        description="Where it came from: 'model:<name>' for a model's own knowledge, or the "
        "document id in a retrieval corpus."
    )
