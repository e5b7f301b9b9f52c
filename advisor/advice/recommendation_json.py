"""A `Recommendation` as JSON, and the JSON schema, both derived from its dataclasses by pydantic.

Imported only where JSON is wanted (`recommend --format json`, tests), so text and Markdown never build the adapter.
`python -m advisor.advice.recommendation_json` rewrites docs/recommendation.schema.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import TypeAdapter

from advisor.advice.recommendation import Recommendation
from advisor.fileio.atomic_write import write_atomic

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "recommendation.schema.json"
_ADAPTER = TypeAdapter(Recommendation)


def to_json(rec: Recommendation) -> str:
    """The documented JSON, indented by 2 (what `recommend --format json` prints)."""
    return _ADAPTER.dump_json(rec, indent=2).decode()


def from_json(text: str | bytes) -> Recommendation:
    """Parse and check a recommendation's JSON: a missing, mistyped or undeclared key raises ValidationError."""
    return _ADAPTER.validate_json(text)


def schema_text() -> str:
    """docs/recommendation.schema.json as it should read."""
    return json.dumps(_ADAPTER.json_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(write_atomic(SCHEMA_FILE, schema_text()))
