"""Accounts: identity, registration (residence, 18+), login and access tokens, sessions with
where each came from, self-exclusion; register and login ask geo (see README.md).

No KYC profile. This is the first vertical slice through the kit:
a gRPC call changes PostgreSQL and records an event in the outbox in one
transaction; the relay publishes it to ``tavla.accounts.v1``.
"""
