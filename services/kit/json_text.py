"""JSON text as ``json.dumps`` writes it, without building an encoder on every call.

``json.dumps`` makes a new C encoder each time it is called; code that encodes on
every command or event (a game's state, an event's headers, the content an event
signature covers) keeps one made once. The text is the same as ``json.dumps`` with
the same options. No cycle is looked for: only data without cycles may be given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

# The C encoder json.dumps itself uses (None in a Python built without _json).
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)


def _unencodable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encoder(
    *, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")
) -> Callable[[Any], str]:
    """A function giving ``json.dumps(data, sort_keys=..., separators=...)``'s text."""
    item_separator, key_separator = separators
    if _c_make_encoder is None:  # a Python without the _json accelerator

        def dumps(data: Any) -> str:
            return json.dumps(data, sort_keys=sort_keys, separators=separators)

        return dumps
    encode = _c_make_encoder(
        None, _unencodable, encode_basestring_ascii, None,
        key_separator, item_separator, sort_keys, False, True,
    )  # fmt: skip

    def dumps_once_built(data: Any) -> str:
        return "".join(encode(data, 0))

    return dumps_once_built


to_json = encoder()
to_sorted_json = encoder(sort_keys=True)
