"""The wallet's topic and the protobuf forms of its values (money, moments, periods)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from services.wallet.domain.limits import LimitPeriod
from services.wallet.domain.money import Money
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import wallet_pb2

TOPIC = "tavla.wallet.v1"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp(moment: datetime) -> Timestamp:
    """``moment`` as a protobuf Timestamp (a naive one taken as UTC), in integer arithmetic.

    The same value as ``Timestamp.FromDatetime``, whose pure-Python time-tuple conversion
    was about a hundredth of the settling process's CPU (one per Settled event).
    """
    since = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) - _EPOCH
    return Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1000)


def money_message(money: Money) -> money_pb2.Money:
    return money_pb2.Money(minor_units=money.amount, currency=money.currency)


_PERIODS = {
    LimitPeriod.DAY: wallet_pb2.LIMIT_PERIOD_DAY,
    LimitPeriod.WEEK: wallet_pb2.LIMIT_PERIOD_WEEK,
    LimitPeriod.MONTH: wallet_pb2.LIMIT_PERIOD_MONTH,
}


def period_message(period: LimitPeriod) -> wallet_pb2.LimitPeriod.ValueType:
    return _PERIODS[period]
