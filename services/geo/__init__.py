"""The geo service: location decisions and jurisdiction rules (see its README).

``domain/`` holds the pure rules and decision, ``lookup`` reads the MaxMind-format
databases, ``service``/``api``/``main`` serve ``CheckLocation`` and ``ListJurisdictions``,
``events`` records every decision (group commits through the outbox). ``devdata``
(dev and test databases) and ``bench``/``benchdata`` (``tavla bench geo``) need the
``local`` extra.
"""
