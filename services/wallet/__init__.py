"""The wallet: where real money lives.

It owns every player's balance in every currency (real money and ``PLAY``), the
double-entry ledger those balances are derived from, the stakes held while a
player sits at a table, the settlement of finished games and matches, the house
commission and its versioned schedule, deposits and withdrawals through a
payment provider, and the responsible-gaming limits (deposit limits,
self-exclusion, frozen accounts) that guard them.

``domain`` holds the pure rules; the service layer (store, unit of work, gRPC,
Kafka consumers) is built on top of it and adds no rules of its own.
"""
