"""Event signatures: what the relay signs is a detached ES256 JWS that PyJWT verifies,
bound to the event's value, id, type, topic and key."""

from __future__ import annotations

import re
from collections.abc import Callable

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.api_jws import PyJWS

from services.kit.events.signing import (
    ALGORITHM,
    EventSigner,
    EventVerifier,
    SignatureRefused,
    signed_content,
)
from services.kit.keys import key_id

KEY = ec.generate_private_key(ec.SECP256R1())
HEADERS = {"ce_id": "e-1", "ce_type": "tavla.game.v1.GameEnded", "ce_source": "//tavla/game"}
VERIFIER = EventVerifier({"game": {key_id(KEY.public_key()): KEY.public_key()}})


def test_a_signature_is_a_detached_jws_pyjwt_verifies() -> None:
    token = EventSigner("game", KEY).sign("tavla.game.v1", "g-1", b"value", HEADERS)
    header, payload, _ = token.split(".")
    assert payload == ""  # detached: the content travels as the event itself
    # The protected header is PyJWT's own for the same key and service.
    made_by_pyjwt = PyJWS().encode(
        b"", KEY, algorithm=ALGORITHM,
        headers={"kid": key_id(KEY.public_key()), "iss": "game"}, is_payload_detached=True,
    )  # fmt: skip
    assert header == made_by_pyjwt.partition(".")[0]
    decoded = PyJWS(algorithms=[ALGORITHM]).decode_complete(
        token, KEY.public_key(), algorithms=[ALGORITHM],
        detached_payload=signed_content("tavla.game.v1", "g-1", b"value", HEADERS),
    )  # fmt: skip
    assert decoded["header"]["iss"] == "game"
    headers = {**HEADERS, "ce_signature": token}
    assert VERIFIER.producer("tavla.game.v1", "g-1", b"value", headers) == "game"


@pytest.mark.parametrize(
    ("topic", "key", "value", "changed"),
    [
        ("tavla.game.v1", "g-1", b"other", {}),
        ("tavla.game.v1", "g-2", b"value", {}),
        ("tavla.game.v1", "g-1", b"value", {"ce_id": "e-2"}),
        ("tavla.game.v1", "g-1", b"value", {"ce_type": "tavla.game.v1.GameStarted"}),
    ],
    ids=["value", "key", "id", "type"],
)
def test_a_signature_does_not_fit_another_event(
    topic: str, key: str, value: bytes, changed: dict[str, str]
) -> None:
    token = EventSigner("game", KEY).sign("tavla.game.v1", "g-1", b"value", HEADERS)
    with pytest.raises(SignatureRefused, match="does not match"):
        VERIFIER.producer(topic, key, value, {**HEADERS, **changed, "ce_signature": token})


def test_a_signature_by_another_key_is_refused() -> None:
    token = EventSigner("game", ec.generate_private_key(ec.SECP256R1())).sign(
        "tavla.game.v1", "g-1", b"value", HEADERS
    )
    with pytest.raises(SignatureRefused):
        VERIFIER.producer("tavla.game.v1", "g-1", b"value", {**HEADERS, "ce_signature": token})
    with pytest.raises(jwt.InvalidTokenError):
        PyJWS(algorithms=[ALGORITHM]).decode_complete(
            token, KEY.public_key(), algorithms=[ALGORITHM],
            detached_payload=signed_content("tavla.game.v1", "g-1", b"value", HEADERS),
        )  # fmt: skip


def _signed(token_key: ec.EllipticCurvePrivateKey, **protected: object) -> str:
    """A detached JWS over the event above by ``token_key``, with these header fields."""
    return PyJWS().encode(
        signed_content("tavla.game.v1", "g-1", b"value", HEADERS), token_key,
        algorithm=ALGORITHM, is_payload_detached=True,
        headers={"kid": key_id(KEY.public_key()), "iss": "game", **protected},
    )  # fmt: skip


def _produced_by(token: str) -> str:
    headers = {**HEADERS, "ce_signature": token}
    return VERIFIER.producer("tavla.game.v1", "g-1", b"value", headers)


def test_a_known_header_does_not_stand_for_the_signature() -> None:
    """The header's checks are remembered; every event's own signature is still checked."""
    assert _produced_by(EventSigner("game", KEY).sign("tavla.game.v1", "g-1", b"value", HEADERS))
    # The same protected header (kid and iss of the game's key) over another key's signature.
    forged = _signed(ec.generate_private_key(ec.SECP256R1()))
    assert forged.partition(".")[0] == _signed(KEY).partition(".")[0]
    with pytest.raises(SignatureRefused, match="does not match"):
        _produced_by(forged)
    header, _, signature = forged.split(".")
    with pytest.raises(SignatureRefused, match="does not match"):
        _produced_by(f"{header}..{signature[:-4]}AAAA")


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (lambda: _signed(KEY).replace("..", ".e30.", 1), "must be detached"),
        (lambda: _signed(KEY) + ".x", "three segments"),
        (lambda: _signed(KEY).rpartition(".")[0] + ".A", "not base64url"),
        (lambda: PyJWS().encode(b"{}", KEY, algorithm=ALGORITHM,
                                headers={"kid": key_id(KEY.public_key()), "iss": "game"}),
         "detached, unencoded"),
        (lambda: PyJWS().encode(b"", "secret-of-32-bytes-or-more-for-hs256!", algorithm="HS256",
                                headers={"kid": key_id(KEY.public_key()), "iss": "game"},
                                is_payload_detached=True),
         "not signed with ES256"),
        (lambda: _signed(KEY, iss="wallet"), "names 'wallet' but is signed by game's key"),
        (lambda: _signed(KEY, kid="unknown"), "no known service"),
    ],
    ids=["payload", "segments", "signature", "attached", "hs256", "iss", "kid"],
)
def test_a_malformed_signature_is_refused_with_its_reason(
    token: Callable[[], str], reason: str
) -> None:
    with pytest.raises(SignatureRefused, match=re.escape(reason)):
        _produced_by(token())
