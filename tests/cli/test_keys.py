"""`showdown keys generate|show`: key pairs for tables and desks, and their public keys."""

from __future__ import annotations

import base64
import re
import stat
from pathlib import Path

import pytest

from cli.errors import EXIT_ERROR
from cli.main import main
from wire.signing import KeyRing, load_private_key


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["keys", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_generate_writes_a_private_key_0600_and_prints_the_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "table-07.key"
    code, out, err = run(capsys, "generate", "--out", str(key))
    assert code == 0
    name, public = out.strip().split(" ")
    assert name == "table-07"  # from the file name
    assert len(base64.b64decode(public, validate=True)) == 32
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert (tmp_path / "table-07.key.pub").read_text() == out
    assert "mode 0600" in err
    # The printed line enrols the key: what the private key signs, the ring verifies.
    signer = load_private_key(key)
    ring = KeyRing.load(tmp_path / "table-07.key.pub")
    assert ring.verify("table-07", b"hand", signer.sign(b"hand"))


def test_generate_with_a_name_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "desk.key"
    code, generated, _ = run(capsys, "generate", "--out", str(key), "--name", "desk-1")
    assert code == 0
    assert generated.startswith("desk-1 ")
    code, shown, err = run(capsys, "show", "--key", str(key))
    assert (code, shown, err) == (0, generated, "")


def test_generate_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "t1.key"
    assert run(capsys, "generate", "--out", str(key))[0] == 0
    before = key.read_bytes()
    code, out, err = run(capsys, "generate", "--out", str(key))
    assert (code, out) == (EXIT_ERROR, "")
    assert "already exists; refusing to overwrite a key" in err
    assert key.read_bytes() == before
    # Nor when only the .pub is in the way.
    other = tmp_path / "t2.key"
    (tmp_path / "t2.key.pub").write_text("x")
    code, _, err = run(capsys, "generate", "--out", str(other))
    assert code == EXIT_ERROR
    assert "t2.key.pub already exists" in err
    assert not other.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "{d}/Table_07.key"], "key id 'Table_07' is not valid.*give --name"),
        (["--out", "{d}/t.key", "--name", "Desk 1"], "key id 'Desk 1' is not valid"),
        (["--out", "{d}/missing/t.key"], "directory .*missing does not exist"),
    ],
)
def test_generate_refuses_bad_names_and_places(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, "generate", *(a.format(d=tmp_path) for a in args))
    assert (code, out) == (EXIT_ERROR, "")
    assert err.startswith("showdown keys: error: ")
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_show_refuses_a_key_others_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "t1.key"
    run(capsys, "generate", "--out", str(key))
    key.chmod(0o644)
    code, out, err = run(capsys, "show", "--key", str(key))
    assert (code, out) == (EXIT_ERROR, "")
    assert "accessible by group or others (mode 0644)" in err
    assert f"chmod 600 {key}" in err


def test_show_refuses_what_is_not_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "show", "--key", str(tmp_path / "none.key"))
    assert code == EXIT_ERROR
    assert "does not exist" in err
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    text.chmod(0o600)
    code, _, err = run(capsys, "show", "--key", str(text))
    assert code == EXIT_ERROR
    assert "is not a showdown private key file" in err
