"""What signing and verifying an event costs (`make bench`): CPU time, measured in-process.

The relay signs every record it publishes and every consumer verifies each event it
applies (services/kit/events/signing.py). Prints both per event, for a GameEnded-sized
value (about 300 bytes); asserts only that the wrong key is refused, so the figures
measure real verifications.
"""

from __future__ import annotations

import time
import uuid

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.events.signing import (
    SIGNATURE_HEADER,
    EventSigner,
    EventVerifier,
    SignatureRefused,
)
from services.kit.keys import key_id

EVENTS = 2000
VALUE = bytes(range(256)) + b"x" * 44


def test_event_signature_costs() -> None:
    game, analysis = (ec.generate_private_key(ec.SECP256R1()) for _ in range(2))
    signer = EventSigner("game", game)
    verifier = EventVerifier({
        "game": {key_id(game.public_key()): game.public_key()},
        "analysis": {key_id(analysis.public_key()): analysis.public_key()},
    })  # fmt: skip
    events = [
        {"ce_id": str(uuid.uuid4()), "ce_type": "tavla.game.v1.GameEnded",
         "ce_source": "//tavla/game"}
        for _ in range(EVENTS)
    ]  # fmt: skip
    started = time.process_time()
    for headers in events:
        headers[SIGNATURE_HEADER] = signer.sign("tavla.game.v1", "g-1", VALUE, headers)
    sign_ms = (time.process_time() - started) * 1000 / EVENTS
    started = time.process_time()
    for headers in events:
        assert verifier.producer("tavla.game.v1", "g-1", VALUE, headers) == "game"
    verify_ms = (time.process_time() - started) * 1000 / EVENTS
    print(f"\nevent signature: {sign_ms:.3f} ms CPU to sign, {verify_ms:.3f} ms to verify")
    forged = dict(events[0])
    forged[SIGNATURE_HEADER] = EventSigner("analysis", analysis).sign(
        "tavla.game.v1", "g-1", VALUE, forged
    )
    with pytest.raises(SignatureRefused, match=r"analysis does not own tavla\.game\.v1"):
        verifier.producer("tavla.game.v1", "g-1", VALUE, forged)
