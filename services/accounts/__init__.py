"""Accounts: identity, registration, login and access tokens, self-exclusion.

Later: devices, KYC profile. This is the first vertical slice through the kit:
a gRPC call changes PostgreSQL and records an event in the outbox in one
transaction; the relay publishes it to ``tavla.accounts.v1``.
"""
