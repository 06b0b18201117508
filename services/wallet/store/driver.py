"""Statements sent to the driver as is, for the hot paths (no SQLAlchemy compile step)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession


@dataclass(frozen=True, slots=True)
class DriverStatement:
    """SQL sent to the driver as is: the hot statements skip SQLAlchemy's compile step.

    Written with ``:name`` parameters for reading; sent with ``$n`` placeholders.
    """

    sql: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, sql: str) -> DriverStatement:
        names: list[str] = []

        def placeholder(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        return cls(re.sub(r"(?<![:\w]):([a-z_]+)", placeholder, sql), tuple(names))

    async def execute(self, session: AsyncSession, values: Mapping[str, Any]) -> Sequence[Any]:
        connection = await session.connection()
        params = tuple(values[name] for name in self.names)
        result = await connection.exec_driver_sql(self.sql, params)
        return result.all() if result.returns_rows else ()
