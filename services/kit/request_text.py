"""Every text in every request is checked before a handler sees it: no NUL character, and
no more characters than the field's maximum. Either is INVALID_ARGUMENT naming the field.

Without this, PostgreSQL refused a NUL in a text column, or a value longer than its
``varchar(n)``, and the service answered INTERNAL (a 500 through the gateway) for what
was the caller's mistake. One check in the kit, on every service's server, rather than
one in each handler: a new method or field is covered with no change, and the maximum
lengths are declared once, here.

Maximums, in characters (code points, as ``len`` counts them):

- an identifier (a field named ``*_id`` or ``*_ids``): 64, the widest id column;
- a field named below (by its full protobuf name): its own maximum;
- any other text: :data:`DEFAULT_MAX_CHARS`.

A service may still refuse a shorter text by its own rules (a display name, a chat
message after normalisation); this is only the bound no request may pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from services.kit.errors import InvalidArgument

DEFAULT_MAX_CHARS = 200
ID_MAX_CHARS = 64
_EMAIL = 254  # RFC 5321's longest forward path, less its brackets
_PASSWORD = 256  # services/accounts/domain.py PASSWORD_MAX
_NOTE = 2000  # a compliance officer's note (services/antiabuse/service.py MAX_NOTE)

MAX_CHARS: dict[str, int] = {
    "tavla.accounts.v1.RegisterRequest.email": _EMAIL,
    "tavla.accounts.v1.LoginRequest.email": _EMAIL,
    "tavla.accounts.v1.RegisterRequest.password": _PASSWORD,
    "tavla.accounts.v1.LoginRequest.password": _PASSWORD,
    # Blanks are folded before the game's own limit (280) applies, with its own message.
    "tavla.game.v1.PostChatMessageRequest.text": 1000,
    "tavla.game.v1.PostLobbyMessageRequest.text": 1000,
    "tavla.antiabuse.v1.ResolveAlertRequest.note": _NOTE,
    "tavla.antiabuse.v1.OpenCaseRequest.note": _NOTE,
    "tavla.antiabuse.v1.AddCaseNoteRequest.note": _NOTE,
    "tavla.antiabuse.v1.ResolveCaseRequest.note": _NOTE,
    "tavla.antiabuse.v1.ApproveSanctionsRequest.note": _NOTE,
    "tavla.antiabuse.v1.RejectSanctionsRequest.note": _NOTE,
    "tavla.wallet.v1.FreezeAccountRequest.reason": 500,
    "tavla.wallet.v1.UnfreezeAccountRequest.reason": 500,
    # A whole match record (the game service sends it for analysis).
    "tavla.analysis.v1.AnalyseMatchRequest.mat_text": 1_000_000,
}


def max_length(field: FieldDescriptor) -> int:
    """The most characters ``field`` (a string field) may hold in a request."""
    declared = MAX_CHARS.get(field.full_name)
    if declared is not None:
        return declared
    if field.name.endswith(("_id", "_ids")):
        return ID_MAX_CHARS
    return DEFAULT_MAX_CHARS


def text_problem(request: Message) -> str | None:
    """Why ``request`` may not be handled (its first bad text), or None.

    Every request is checked, so the common case (nothing wrong) is one walk over the
    set fields with each field's maximum remembered (:func:`_all_fine`); the texts'
    paths for the message are worked out only when something is wrong.
    """
    if _all_fine(request):
        return None
    for path, field, value in _texts(request, ""):
        if "\x00" in value:
            return f"{path} contains a NUL character (\\x00), which no text may hold"
        limit = max_length(field)
        if len(value) > limit:
            return f"{path} is {len(value)} characters long; at most {limit} are accepted"
    return None


Text = tuple[str, FieldDescriptor, str]  # a text's path, its field and the text
_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_limits: dict[FieldDescriptor, int] = {}  # max_length by field, as fields are first seen


def _fine(field: FieldDescriptor, value: str) -> bool:
    limit = _limits.get(field)
    if limit is None:
        limit = _limits[field] = max_length(field)
    return "\x00" not in value and len(value) <= limit


def _all_fine(message: Message) -> bool:
    """True if no text set in ``message`` is bad (what :func:`_texts` walks, without paths)."""
    for field, value in message.ListFields():
        kind = field.type
        if kind == _STRING:
            if field.is_repeated:
                if not all(_fine(field, item) for item in value):
                    return False
            elif not _fine(field, value):
                return False
        elif kind == _MESSAGE:
            entry = field.message_type
            if entry is not None and entry.GetOptions().map_entry:
                if not all(_fine(f, text) for _, f, text in _map_texts(entry, value, "")):
                    return False
            elif field.is_repeated:
                if not all(_all_fine(item) for item in value):
                    return False
            elif not _all_fine(value):
                return False
    return True


def _texts(message: Message, prefix: str) -> Iterator[Text]:
    """Every text set in ``message``, with its path (``players[1].display_name``)."""
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        if field.type == FieldDescriptor.TYPE_STRING:
            items = enumerate(value) if field.is_repeated else [(None, value)]
            for index, item in items:
                yield (path if index is None else f"{path}[{index}]"), field, item
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            entry = field.message_type
            if entry is not None and entry.GetOptions().map_entry:
                yield from _map_texts(entry, value, path)
            elif field.is_repeated:
                for index, item in enumerate(value):
                    yield from _texts(item, f"{path}[{index}].")
            else:
                yield from _texts(value, f"{path}.")


def _map_texts(entry: Descriptor, items: Any, path: str) -> Iterator[Text]:
    """A map field's texts: its keys and, where they are texts or messages, its values."""
    key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
    for key, value in items.items():
        if key_field.type == FieldDescriptor.TYPE_STRING:
            yield f"{path} key", key_field, key
        if value_field.type == FieldDescriptor.TYPE_STRING:
            yield f"{path}[{key!r}]", value_field, value
        elif value_field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _texts(value, f"{path}[{key!r}].")


def refuse_bad_text(request: Any) -> None:
    """InvalidArgument, naming the field, if ``request`` holds a bad text (:func:`text_problem`).

    The kit's server interceptor (:mod:`services.kit.interceptors`) calls it on every
    request once its caller is admitted.
    """
    if isinstance(request, Message) and (problem := text_problem(request)) is not None:
        raise InvalidArgument(problem)
