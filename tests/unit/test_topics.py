"""One name per topic: what the protos say events are published on, what the services
consume and publish, deploy/topics.txt and the chart all agree."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# A topic as the protos' comments name it: `tavla.game.v1` (not a message's full name).
TOPIC = re.compile(r"`(tavla\.[a-z.]+\.v1)`")


def listed_topics() -> set[str]:
    lines = (ROOT / "deploy" / "topics.txt").read_text().splitlines()
    return {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}


def test_every_topic_the_event_protos_name_is_created() -> None:
    topics = listed_topics()
    for events in sorted((ROOT / "protos").glob("tavla/*/v1/events.proto")):
        named = set(TOPIC.findall(events.read_text()))
        assert named, f"{events} names no topic"
        assert named <= topics, f"{events.relative_to(ROOT)}: {sorted(named - topics)} missing"


def test_every_topic_constant_in_the_services_is_created() -> None:
    topics = listed_topics()
    constant = re.compile(r'^\w*TOPIC\w* = "([^"]+)"', re.MULTILINE)
    for source in sorted((ROOT / "services").rglob("*.py")):
        for name in constant.findall(source.read_text()):
            assert name in topics, f"{source.relative_to(ROOT)} uses topic {name}, not created"


def test_the_chart_creates_the_same_topics_and_matchmaking_has_one_name() -> None:
    values = yaml.safe_load((ROOT / "charts" / "tavla" / "values.yaml").read_text())
    assert {t["name"] for t in values["kafka"]["topics"]} == listed_topics()
    assert "tavla.matchmaking.v1" in listed_topics()
    assert "tavla.antiabuse.v1" in listed_topics()
    assert "tavla.match.v1" not in listed_topics()
