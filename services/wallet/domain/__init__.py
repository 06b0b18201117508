"""The wallet's pure domain: money, ledger, holds, settlement, commission, limits, audit.

No database, network, asyncio or clock: every function takes the state it needs
and the current time as arguments and returns new plain data. Modules:

- ``money``: ``Money`` (integer minor units + currency) and half-up rounding.
- ``errors``: ``WalletError`` and the domain errors the API maps to statuses.
- ``terms``: what is at stake at a table (money game or match) and result kinds.
- ``schedule``: the versioned commission schedule and its parser/loader.
- ``commission``: the commission computation for one settlement.
- ``ledger``: accounts, transfer codes, transfers, balances and posting rules.
- ``holds``: two-phase stake holds and the can-cover check for doubles.
- ``settlement``: from a game or match result to the transfers that pay it.
- ``payments``: the deposit/withdrawal state machine driven by provider callbacks.
- ``limits``: deposit limits, self-exclusion and frozen accounts.
- ``rates``: the planning rates a deposit in one currency counts at against a limit in another.
- ``audit``: invariant checks over a snapshot of the ledger.
"""
