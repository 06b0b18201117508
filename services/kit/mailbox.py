"""One person's mailbox however it is spelled: the key that anti-abuse links accounts by
and that accounts refuses a terminated person's re-registration by.

Case, ``+tags`` and, for Gmail (whose addresses ignore dots; googlemail.com is
the same service), dots in the local part are removed: ``A.Lice+x@GoogleMail.com``
is ``alice@gmail.com``. Other providers' dots are kept (they may be significant).
"""

from __future__ import annotations

_GMAIL = {"gmail.com", "googlemail.com"}


def mailbox_key(email: str) -> str | None:
    """The normalised mailbox, or None for text that is not an address."""
    local, at, domain = email.strip().lower().rpartition("@")
    if not at or not local or not domain:
        return None
    local = local.split("+", 1)[0]
    if domain in _GMAIL:
        local, domain = local.replace(".", ""), "gmail.com"
    return f"{local}@{domain}" if local else None
