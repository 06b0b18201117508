"""The kit's encoders made once give json.dumps's own text."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from services.kit.json_text import encoder, to_json, to_sorted_json

SAMPLES: list[Any] = [
    {"b": 1, "a": [1.5, -0.0, 1e21, None, True, False], "c": {"z": 'é\u202e"\\\n', "y": []}},
    [{"x": 2**70}, "tab\there", {}, [], ""],
    {"ce_id": "6f0c", "ce_type": "tavla.game.v1.MovePlayed", "content-type": "application/x"},
    "only a string",
    12,
]


@pytest.mark.parametrize("data", SAMPLES)
def test_the_text_is_json_dumps(data: Any) -> None:
    assert to_json(data) == json.dumps(data)
    assert to_sorted_json(data) == json.dumps(data, sort_keys=True)
    compact = encoder(sort_keys=True, separators=(",", ":"))
    assert compact(data) == json.dumps(data, sort_keys=True, separators=(",", ":"))


def test_what_json_cannot_encode_is_refused() -> None:
    with pytest.raises(TypeError, match="Decimal"):
        to_json({"amount": Decimal("1.5")})
