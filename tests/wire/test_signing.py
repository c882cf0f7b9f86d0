"""Ed25519 keys: generation, key files (0600, refused when exposed), public key text, KeyRing."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from nacl.signing import SigningKey

from wire.signing import (
    KeyFileError,
    KeyFormatError,
    KeyRing,
    Signer,
    UnknownKey,
    load_private_key,
    parse_public_key,
    save_private_key,
)

SEED = bytes(range(32))


def test_sign_and_verify_round_trip() -> None:
    signer = Signer.generate("table-01")
    signature = signer.sign(b"hand 17 settled")
    assert len(signature) == 64
    assert signer.public_key.verify(b"hand 17 settled", signature)
    assert not signer.public_key.verify(b"hand 18 settled", signature)
    assert not signer.public_key.verify(b"hand 17 settled", signature[:-1])
    other = Signer.generate("table-01")
    assert not other.public_key.verify(b"hand 17 settled", signature)


def test_signature_is_plain_ed25519_of_the_seed() -> None:
    # Independent check with PyNaCl directly: our wrapper adds nothing to the signature.
    signer = Signer.from_seed("desk-1", SEED)
    expected = SigningKey(SEED).sign(b"x").signature
    assert signer.sign(b"x") == expected
    assert signer.public_key.base64 == base64.b64encode(bytes(SigningKey(SEED).verify_key)).decode()


def test_public_key_text_round_trips() -> None:
    signer = Signer.from_seed("desk-1", SEED)
    line = signer.public_key.enrolment_line()
    key_id, text = line.split(" ")
    assert key_id == "desk-1"
    assert len(text) == 44
    parsed = parse_public_key(key_id, text)
    assert parsed.verify(b"abc", signer.sign(b"abc"))


@pytest.mark.parametrize(
    ("key_id", "text", "message"),
    [
        ("desk-1", "not base64!", "not base64"),
        ("desk-1", base64.b64encode(b"short").decode(), "must be 32 bytes"),
        ("Desk_1", base64.b64encode(SEED).decode(), "key id 'Desk_1' is not valid"),
    ],
)
def test_malformed_public_keys_are_refused(key_id: str, text: str, message: str) -> None:
    with pytest.raises(KeyFormatError, match=message):
        parse_public_key(key_id, text)


def test_private_key_file_is_0600_and_loads_back(tmp_path: Path) -> None:
    old = os.umask(0)  # even with a permissive umask the file is private
    try:
        signer = Signer.from_seed("table-01", SEED)
        path = tmp_path / "table-01.key"
        save_private_key(signer, path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["table-01.key"]  # no temp file left
    loaded = load_private_key(path)
    assert loaded.key_id == "table-01"
    assert loaded.sign(b"m") == signer.sign(b"m")
    document = json.loads(path.read_text())
    assert document["format"] == "showdown-ed25519-private-key"
    assert base64.b64decode(document["seed"]) == SEED


def test_existing_key_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    save_private_key(Signer.from_seed("a", SEED), path)
    before = path.read_bytes()
    with pytest.raises(KeyFileError, match="already exists"):
        save_private_key(Signer.generate("a"), path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o602])
def test_key_readable_or_writable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k.key"
    save_private_key(Signer.from_seed("a", SEED), path)
    path.chmod(mode)
    with pytest.raises(KeyFileError, match=rf"mode {mode:04o}.*chmod 600"):
        load_private_key(path)


def test_owner_only_modes_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    save_private_key(Signer.from_seed("a", SEED), path)
    path.chmod(0o400)
    assert load_private_key(path).key_id == "a"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe", "not JSON"),
        (b"[]", "not a showdown private key file"),
        (b'{"format": "other"}', "not a showdown private key file"),
        (b'{"format": "showdown-ed25519-private-key", "version": 2}',
         "unsupported key file version 2"),
        (b'{"format": "showdown-ed25519-private-key", "version": 1, "name": "a", "seed": 5}',
         "'seed' must be base64 text"),
        (b'{"format": "showdown-ed25519-private-key", "version": 1, "name": "a", "seed": "AAAA"}',
         "seed must be 32 bytes"),
        (b'{"format": "showdown-ed25519-private-key", "version": 1, "name": "A B", "seed": "'
         + base64.b64encode(SEED) + b'"}', "key id 'A B' is not valid"),
    ],
)
def test_malformed_key_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match=message):
        load_private_key(path)


def test_missing_key_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="does not exist"):
        load_private_key(tmp_path / "nope.key")
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_private_key(tmp_path)


def test_keyring_verifies_by_key_id() -> None:
    desk = Signer.from_seed("desk-1", SEED)
    ring = KeyRing([desk.public_key])
    assert "desk-1" in ring
    assert len(ring) == 1
    assert ring.verify("desk-1", b"m", desk.sign(b"m"))
    assert not ring.verify("desk-1", b"n", desk.sign(b"m"))
    with pytest.raises(UnknownKey, match="desk-2"):
        ring.verify("desk-2", b"m", desk.sign(b"m"))


def test_keyring_refuses_a_second_key_under_one_id() -> None:
    ring = KeyRing([Signer.from_seed("desk-1", SEED).public_key])
    ring.add(Signer.from_seed("desk-1", SEED).public_key)  # the same key again is fine
    with pytest.raises(KeyFormatError, match="already enrolled with another key"):
        ring.add(Signer.generate("desk-1").public_key)


def test_keyring_loads_an_enrolment_file(tmp_path: Path) -> None:
    a, b = Signer.from_seed("desk-1", SEED), Signer.generate("lb-1")
    path = tmp_path / "desk-keys.txt"
    path.write_text(
        f"# desks enrolled 2025-03-01\n\n{a.public_key.enrolment_line()}\n"
        f"{b.public_key.enrolment_line()}  # leaderboard\n"
    )
    ring = KeyRing.load(path)
    assert sorted(k.key_id for k in ring) == ["desk-1", "lb-1"]
    assert ring.verify("lb-1", b"m", b.sign(b"m"))
    from_mapping = KeyRing.from_mapping({"desk-1": a.public_key.base64})
    assert from_mapping.verify("desk-1", b"m", a.sign(b"m"))


def test_keyring_file_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text("desk-1 AAAA\n")
    with pytest.raises(KeyFormatError, match=r"keys\.txt:1: .*must be 32 bytes"):
        KeyRing.load(path)
    path.write_text("# ok\ndesk-1\n")
    with pytest.raises(KeyFormatError, match=r"keys\.txt:2: expected"):
        KeyRing.load(path)
