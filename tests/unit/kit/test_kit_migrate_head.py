"""The newest revision a service start reads from its revision files without Alembic
(``services.kit.migrate.script_head``) is Alembic's own head for every service, and the
reading stands aside (None: Alembic decides) wherever it could differ from Alembic's."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from services.kit.migrate import alembic_config, head_of, script_head

SERVICES = sorted(
    p.parent.name for p in (Path(__file__).resolve().parents[3] / "services").glob("*/migrations")
)


def revision_file(directory: Path, name: str, revision: str, parent: str | None,
                  extra: str = "") -> None:
    (directory / f"{name}.py").write_text(
        f'"""{name}"""\n\nrevision = "{revision}"\ndown_revision = {parent!r}\n'
        f"branch_labels = None\ndepends_on = None\n{extra}\n\ndef upgrade() -> None:\n    pass\n"
    )


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    revision_file(tmp_path, "0001_a", "0001", None)
    revision_file(tmp_path, "0002_b", "0002", "0001")
    revision_file(tmp_path, "0003_c", "0003", "0002")
    return tmp_path


@pytest.mark.parametrize("service", SERVICES)
def test_every_services_head_is_alembics(service: str) -> None:
    config = alembic_config(service, "postgresql+asyncpg://nobody@127.0.0.1:1/none")
    assert [script_head(service)] == ScriptDirectory.from_config(config).get_heads()


def test_a_plain_chain_reads_as_its_last_revision(chain: Path) -> None:
    assert head_of(chain) == "0003"
    (chain / "__init__.py").write_text("revision = 'not one'\n")  # Alembic skips it too
    assert head_of(chain) == "0003"


@pytest.mark.parametrize(
    "change",
    [
        # two heads: Alembic refuses "head" there, so it must be the one to say so
        lambda d: revision_file(d, "0004_d", "0004", "0002"),
        # a merge revision (a tuple of parents)
        lambda d: (d / "0004_d.py").write_text(
            'revision = "0004"\ndown_revision = ("0003", "0002")\n'),
        # a parent that is not there
        lambda d: revision_file(d, "0004_d", "0004", "0009"),
        # the same revision twice
        lambda d: revision_file(d, "0004_d", "0003", "0002"),
        # a second root
        lambda d: revision_file(d, "0004_d", "0004", None),
        # a cycle beside the chain
        lambda d: (revision_file(d, "0005_e", "0005", "0006"),
                   revision_file(d, "0006_f", "0006", "0005")),
        # a dependency on another revision
        lambda d: (d / "0003_c.py").write_text(
            'revision = "0003"\ndown_revision = "0002"\ndepends_on = "0001"\n'),
        # values that are not plain literals, or bound more than once, or another way
        lambda d: (d / "0003_c.py").write_text(
            'revision = "00" + "03"\ndown_revision = "0002"\n'),
        lambda d: (d / "0003_c.py").write_text(
            'revision = "0003"\ndown_revision = "0002"\nrevision = "0004"\n'),
        lambda d: (d / "0003_c.py").write_text(
            'revision = "0003"\ndown_revision = "0002"\nif True:\n    revision = "0004"\n'),
        lambda d: (d / "0003_c.py").write_text(
            'revision = "0003"\ndown_revision = "0002"\nfrom x import revision\n'),
        lambda d: (d / "0003_c.py").write_text(
            'revision = "0003"\ndown_revision = "0002"\nglobals()["revision"] = "0004"\n'),
        lambda d: (d / "0003_c.py").write_text('down_revision = "0002"\n'),
        lambda d: (d / "0003_c.py").write_text('revision = "0003"\ndown_revision = "0002"\n('),
    ],
)
def test_anything_alembic_could_read_otherwise_stands_aside(chain: Path, change: object) -> None:
    change(chain)  # type: ignore[operator]
    assert head_of(chain) is None
