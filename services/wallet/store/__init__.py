"""The wallet's tables and repositories (SQLAlchemy Core; rows <-> domain objects).

``tables`` holds the schema; ``ledger``, ``holds``, ``payments``, ``players``,
``settlements`` and ``audit`` one repository each; ``unit_of_work`` the
transactions that carry them; ``driver`` the statements sent to the driver as is.

Concurrency: every operation that moves money locks the rows it touches with
``SELECT ... FOR UPDATE`` in one fixed order: holds (sorted by id), then player
accounts (sorted by id); system accounts (house, clearing, held stakes) are never
locked up front but updated by delta after the players, sorted by id. Every
transaction therefore takes its locks in the same global order, so concurrent
operations on the same accounts serialise without deadlocking. A system
account's balance is spread over shard rows (migration 0003) so that every
settlement crediting the house does not queue on one row lock.
The domain checks balances; a CHECK constraint backs it up in the database.
"""
