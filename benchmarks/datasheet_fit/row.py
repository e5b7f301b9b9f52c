"""A published row: what a source measured, and the model's prediction of the same quantity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .sources import ENGINE, VLLM_V1


@dataclass(frozen=True)
class Row:
    id: str
    source: str  # "S1 ..." etc.; the first two characters name it
    what: str
    published: float
    unit: str
    predict: Callable[[dict], float]  # parameters -> the same quantity
    note: str = ""

    @property
    def source_id(self) -> str:
        return self.source.split()[0]

    @property
    def engine(self) -> str:
        return ENGINE[self.source_id]

    @property
    def vllm_v1(self) -> bool:
        return self.source_id in VLLM_V1


