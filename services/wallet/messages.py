"""The wallet's topic and the protobuf forms of its values (money, moments, periods)."""

from __future__ import annotations

from services.wallet.domain.limits import LimitPeriod
from services.wallet.domain.money import Money
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import wallet_pb2

TOPIC = "tavla.wallet.v1"


def money_message(money: Money) -> money_pb2.Money:
    return money_pb2.Money(minor_units=money.amount, currency=money.currency)


_PERIODS = {
    LimitPeriod.DAY: wallet_pb2.LIMIT_PERIOD_DAY,
    LimitPeriod.WEEK: wallet_pb2.LIMIT_PERIOD_WEEK,
    LimitPeriod.MONTH: wallet_pb2.LIMIT_PERIOD_MONTH,
}


def period_message(period: LimitPeriod) -> wallet_pb2.LimitPeriod.ValueType:
    return _PERIODS[period]
