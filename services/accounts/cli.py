"""``tavla accounts``: operator tools for accounts.

``tavla accounts grant-role --email E --role compliance [--revoke] [--by NAME]``
grants (or revokes) a staff role on ``TAVLA_DATABASE_URL`` (the accounts
database): the only way an account becomes a compliance officer; no RPC does
it. The change, who made it (``--by``, else the OS user) and when go to
``role_changes`` and a ``RoleChanged`` event in the outbox, in one transaction
(``services/accounts/roles.py``). Exit 0 on success (also when nothing had to
change), 1 when there is no such account or the role is unknown, 2 when the
database cannot be reached or is not set.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

REFUSED, UNREACHABLE = 1, 2


def register(subparsers: Subparsers) -> None:
    accounts = subparsers.add_parser("accounts", help="accounts tools: staff roles")
    commands = accounts.add_subparsers(dest="accounts_command", required=True,
                                       metavar="SUBCOMMAND")
    grant = commands.add_parser(
        "grant-role",
        help="grant (or --revoke) a staff role to the account with this email, audited",
        description=(
            "Grants a staff role (compliance) to an account on TAVLA_DATABASE_URL, recorded "
            "with who and when (role_changes, RoleChanged on tavla.accounts.v1). The role is "
            "in the account's access tokens from its next login or refresh."
        ),
    )
    grant.add_argument("--email", required=True)
    grant.add_argument("--role", required=True)
    grant.add_argument("--revoke", action="store_true", help="take the role away instead")
    grant.add_argument("--by", default="", help="the operator's name (default: the OS user)")
    grant.set_defaults(handler=_run_grant)


def _run_grant(args: argparse.Namespace) -> int:
    # Imported on use, so building the `tavla` parser stays free of the database stack.
    from sqlalchemy.exc import SQLAlchemyError

    from services.accounts.role_admin import change_role
    from services.kit.config import ConfigError, Env
    from services.kit.errors import DomainError

    try:
        url = Env().text("TAVLA_DATABASE_URL")
    except ConfigError as error:
        print(f"tavla accounts grant-role: {error}", file=sys.stderr)
        return UNREACHABLE
    by = args.by or getpass.getuser()
    try:
        outcome = asyncio.run(change_role(url, args.email, args.role, granted=not args.revoke,
                                          by=by))
    except DomainError as error:
        print(f"tavla accounts grant-role: {error}", file=sys.stderr)
        return REFUSED
    except (OSError, SQLAlchemyError) as error:
        print(f"tavla accounts grant-role: cannot reach the accounts database: {error}",
              file=sys.stderr)
        return UNREACHABLE
    print(outcome)
    return 0
