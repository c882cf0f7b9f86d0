"""`showdown leaderboard standings` prints the standings from a database; `serve` checks its
config before anything starts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli.errors import EXIT_ERROR
from cli.main import main
from controller.embedded_broker import EmbeddedBroker
from leaderboard.db import make_engine
from leaderboard.display_names import entry_code
from tests.fixtures.services import Database, MqttBroker
from tests.leaderboard.support import seed_field, write_config
from wire.signing import Signer

REPO = Path(__file__).resolve().parents[2]
TOURNAMENT = str(REPO / "config" / "tournament.toml")
AT = "2026-07-08T22:00"  # venue time, mid-qualifying


def test_standings_text_and_json(database_url: Database, capsys: pytest.CaptureFixture[str]
                                 ) -> None:
    engine = make_engine(database_url.url)
    database_url.migrate(engine)
    seed_field(engine)
    engine.dispose()

    assert main(["leaderboard", "standings", "--db", database_url.url,
                 "--tournament", TOURNAMENT, "--rows", "13", "--at", AT]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert "Qualifying" in lines[0]
    code = entry_code("E-1a07c2")  # the page's short code, not the entry id (D331)
    first = next(line for line in lines if code in line)
    assert first.split()[:3] == ["1", code, "R5,125.00"]
    assert "E-1a07c2" not in text
    assert "---- top 12 advance ----" in text
    assert "... and 1 more" in text
    assert "awaiting acknowledgement: 1" in text
    # 15 buy-ins: R1,200.00 to the Final Prize Pool, R300.00 to the Top Score Progressive.
    assert "Final Prize Pool (80% of 15 buy-ins): R1,200.00" in text
    assert "Top Score Progressive (20% of 15 buy-ins): R300.00" in text

    assert main(["leaderboard", "standings", "--db", database_url.url,
                 "--tournament", TOURNAMENT, "--json", "--at", AT]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["board"]["counted"] == 14
    assert (doc["board"]["rows"][0]["entry_id"], doc["board"]["rows"][0]["code"]) == (
        "E-1a07c2", code)  # the JSON keeps the id and adds the code
    assert doc["pools"]["entries"] == 15
    assert doc["generated_local"] == "2026-07-08 22:00"

    # After the Final the current board is the Final's; --stage still shows qualifying.
    assert main(["leaderboard", "standings", "--db", database_url.url,
                 "--tournament", TOURNAMENT, "--json", "--at", "2026-08-02T10:00"]) == 0
    assert json.loads(capsys.readouterr().out)["stage"] == "final"
    assert main(["leaderboard", "standings", "--db", database_url.url,
                 "--tournament", TOURNAMENT, "--json", "--at", "2026-08-02T10:00",
                 "--stage", "qualifying"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert (after["stage"], after["board"]["counted"]) == ("qualifying", 14)
    assert main(["leaderboard", "standings", "--db", database_url.url, "--at", "soon"]) == \
        EXIT_ERROR
    assert "--at" in capsys.readouterr().err


def test_standings_of_a_database_without_the_schema(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    assert main(["leaderboard", "standings", "--db", url, "--tournament", TOURNAMENT]) == \
        EXIT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "no such SQLite file" in err[0]
    assert not (tmp_path / "empty.sqlite3").exists()  # a mistyped URL creates nothing
    (tmp_path / "empty.sqlite3").touch()
    assert main(["leaderboard", "standings", "--db", url, "--tournament", TOURNAMENT]) == \
        EXIT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "has no leaderboard tables" in err[0]


def test_standings_with_a_bad_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", "standings", "--db", "nosuchdb://x",
                 "--tournament", TOURNAMENT]) == EXIT_ERROR
    assert "cannot use database" in capsys.readouterr().err


def test_serve_refuses_a_bad_config_in_one_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "leaderboard.toml"
    path.write_text('[service]\nvenue = "casino-1"\n[mqtt]\nbroker = "embedded"\n'
                    '[keys]\nsigning_key = "k"\n')
    assert main(["leaderboard", "serve", "--config", str(path)]) == EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert err.startswith("showdown leaderboard: error:")
    assert "mqtt.broker" in err
    assert "\n" not in err


@contextmanager
def _broker_in_a_thread() -> Iterator[int]:
    """An embedded broker on its own event loop (the CLI runs its own); yields its port."""
    started, done, ports = threading.Event(), threading.Event(), []

    async def serve() -> None:
        async with EmbeddedBroker() as broker:
            ports.append(broker.port)
            started.set()
            while not done.is_set():
                await asyncio.sleep(0.02)

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    try:
        assert started.wait(30), "the embedded broker did not start"
        yield ports[0]
    finally:
        done.set()
        thread.join(30)


def test_serve_with_a_shared_group_on_the_embedded_broker_stops_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # amqtt cannot deliver to $share/... subscriptions, so it refuses them, and the service
    # stops naming the setting instead of waiting for messages that would never come.
    with _broker_in_a_thread() as port:
        path = write_config(tmp_path, MqttBroker(kind="embedded", host="127.0.0.1", port=port),
                            "showdown-test/shared", Signer.generate("t01"))
        path.write_text(path.read_text().replace("[mqtt]\n", '[mqtt]\nshared_group = "lb"\n'))
        assert main(["leaderboard", "serve", "--config", str(path)]) == EXIT_ERROR
    printed = capsys.readouterr().err
    assert "Traceback" not in printed
    err = printed.strip().splitlines()[-1]
    assert err.startswith("showdown leaderboard: error: mqtt: shared_group: the broker at"
                          f" 127.0.0.1:{port} refused the shared subscription $share/lb/"
                          "showdown-test/shared/goldreef/tables/+/")
    assert err.endswith("use Mosquitto, or remove shared_group")
