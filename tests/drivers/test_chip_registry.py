"""The chip registry: UID -> value and chip set; problems are alerts, never value."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.chip_registry_files import read_registry, write_registry_csv
from drivers.chip_registry import problem_alert
from drivers.readings import SpotId
from game.chips.registry import (
    Chip,
    ChipRegistry,
    format_uid,
    parse_registry_csv,
    parse_registry_toml,
    parse_uid,
)
from game.errors import ConfigError
from simulators.rfid import build_sim_registry

REPO = Path(__file__).resolve().parents[2]

CSV = """\
uid_hex,value_cents,chip_set,issued_to
E000000000000001,2500,showdown-2026,E-1
E000000000000002,10000,showdown-2026,E-1
E000000000000003,50000,showdown-2026,E-2
e000000000000004,2500,showdown-2026,
E000000000000005,2500,cash-2019,
"""
A1, A2, B3, FLOAT4, CASH5 = (bytes.fromhex(f"E00000000000000{i}") for i in range(1, 6))
UNKNOWN = bytes.fromhex("E004FFFFFFFFFFFF")


@pytest.fixture
def registry() -> ChipRegistry:
    """Float chips count for any seat here (require_issued off, D30)."""
    return parse_registry_csv(CSV, source="reg.csv", chip_set="showdown-2026",
                              require_issued=False)


def test_lookup_values_and_sets(registry: ChipRegistry) -> None:
    assert len(registry) == 5
    assert registry.chip_sets == ("cash-2019", "showdown-2026")
    assert registry.lookup(A2) == Chip(uid=A2, value_cents=10000, chip_set="showdown-2026",
                                       issued_to="E-1")
    assert registry.lookup(FLOAT4) is not None
    assert registry.lookup(FLOAT4).issued_to is None  # type: ignore[union-attr]
    assert registry.lookup(UNKNOWN) is None
    assert registry.issued_to("E-1") == (
        registry.lookup(A1), registry.lookup(A2)
    )


def test_clean_chips_total_in_integer_cents(registry: ChipRegistry) -> None:
    total, problems = registry.resolve({A1, A2, FLOAT4}, entry="E-1")
    assert total == 2500 + 10000 + 2500  # R25 + R100 + R25 = R150
    assert isinstance(total, int)
    assert problems == ()


def test_an_unknown_uid_is_a_problem_never_a_value(registry: ChipRegistry) -> None:
    total, problems = registry.resolve({A1, UNKNOWN}, entry="E-1", spot=SpotId(1, "ante"))
    assert total == 2500
    assert [p.kind for p in problems] == ["unknown_chip"]
    assert problems[0].uid == UNKNOWN
    assert "E004FFFFFFFFFFFF" in problems[0].detail
    assert "seat 1 ante" in problems[0].detail


def test_a_chip_of_another_set_is_a_problem(registry: ChipRegistry) -> None:
    total, problems = registry.resolve({CASH5}, entry="E-1")
    assert total == 0
    assert [p.kind for p in problems] == ["other_chip_set"]
    assert "cash-2019" in problems[0].detail


def test_a_chip_issued_to_another_entry_is_a_problem(registry: ChipRegistry) -> None:
    total, problems = registry.resolve({A1, B3}, entry="E-1", spot=SpotId(3, "odds"))
    assert total == 2500
    assert [(p.kind, p.uid) for p in problems] == [("issued_to_other_entry", B3)]
    assert "E-2" in problems[0].detail
    assert "E-1" in problems[0].detail


def test_issued_chips_on_a_seat_without_entry_are_problems(registry: ChipRegistry) -> None:
    total, problems = registry.resolve({A1, FLOAT4}, entry=None)
    assert total == 2500  # only the unissued float chip
    assert [p.kind for p in problems] == ["issued_to_other_entry"]


def test_require_issued_refuses_float_chips() -> None:
    strict = parse_registry_csv(CSV, source="reg.csv", chip_set="showdown-2026")  # D346
    assert strict.require_issued
    total, problems = strict.resolve({A1, FLOAT4}, entry="E-1")
    assert total == 2500
    assert [p.kind for p in problems] == ["not_issued"]


def test_every_problem_at_once_sorted_by_uid(registry: ChipRegistry) -> None:
    total, problems = registry.resolve([UNKNOWN, CASH5, B3, A2], entry="E-1")
    assert total == 10000
    assert [p.uid for p in problems] == sorted([UNKNOWN, CASH5, B3])
    alert = problem_alert(problems[0], device="SR48-1")
    assert (alert.device, alert.kind) == ("SR48-1", problems[0].kind)


@given(st.sets(st.sampled_from([A1, A2, B3, FLOAT4, CASH5, UNKNOWN])),
       st.sampled_from(["E-1", "E-2", None]))
def test_total_plus_problems_partition_the_chips(uids: set[bytes], entry: str | None) -> None:
    registry = parse_registry_csv(CSV, source="reg.csv", chip_set="showdown-2026")
    total, problems = registry.resolve(uids, entry=entry)
    bad = {p.uid for p in problems}
    assert bad <= uids
    good = uids - bad
    values = 0
    for u in good:
        chip = registry.lookup(u)
        assert chip is not None
        values += chip.value_cents
        assert chip.chip_set == "showdown-2026"
        assert chip.issued_to in (None, entry)
    assert total == values


# ----------------------------------------------------------------------------- formats


def test_uid_text_form() -> None:
    assert parse_uid("e0045d0000000001") == bytes.fromhex("E0045D0000000001")
    assert format_uid(bytes.fromhex("e0045d0000000001")) == "E0045D0000000001"
    for bad in ("E0045D00000000", "E0045D000000000G", "E0:04:5D:00:00:00:00:01", ""):
        with pytest.raises(ValueError, match="16 hex digits"):
            parse_uid(bad)


def test_csv_comments_blank_lines_and_three_columns() -> None:
    text = "# cage export\n\nuid_hex,value_cents,chip_set\n E000000000000001 , 2500 , s1 \n"
    reg = parse_registry_csv(text, source="x.csv")
    assert reg.chip_set == "s1"
    assert reg.resolve({A1}, entry=None) == (2500, ())  # nobody plays it: no problem
    assert [p.kind for p in reg.resolve({A1}, entry="anyone").problems] == ["not_issued"]
    assert reg.requiring(False).resolve({A1}, entry="anyone") == (2500, ())


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("uid,value,set\n", "x.csv:1: header", "expected uid_hex,value_cents,chip_set"),
        ("uid_hex,value_cents,chip_set\nE00000000000001,2500,s\n", "x.csv:2: uid_hex",
         "16 hex digits"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,25.00,s\n", "x.csv:2: value_cents",
         "whole cents"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,-5,s\n", "x.csv:2: value_cents",
         "whole cents"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,0,s\n", "x.csv:2: value_cents",
         "1..100000000"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,,s\n", "x.csv:2: value_cents",
         "whole cents"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,2500, \n", "x.csv:2: chip_set",
         "letters, digits"),
        ("uid_hex,value_cents,chip_set\nE000000000000001,2500\n", "x.csv:2", "2 fields"),
        ("uid_hex,value_cents,chip_set\n# c\nE000000000000001,2500,s\ne000000000000001,100,s\n",
         "x.csv:4: uid_hex", "already on line 3"),
        ("uid_hex,value_cents,chip_set,issued_to\nE000000000000001,2500,s,bad entry\n",
         "x.csv:2: issued_to", "letters, digits"),
        ("", "x.csv: header", "empty file"),
        ("uid_hex,value_cents,chip_set\n", "x.csv", "no chips registered"),
        ('uid_hex,value_cents,chip_set\n"E000000000000001"x,2500,s\n', "x.csv:2",
         "CSV syntax error"),
    ],
)
def test_csv_errors_name_file_line_and_column(text: str, where: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_registry_csv(text, source="x.csv")
    assert str(err.value).startswith(where)
    assert message in str(err.value)


def test_the_chip_set_in_play_must_be_named_and_registered() -> None:
    with pytest.raises(ConfigError, match=r"name the chip set in play .*cash-2019, showdown-2026"):
        parse_registry_csv(CSV, source="x.csv")
    with pytest.raises(ConfigError, match="no chip of chip set 'showdown-2062'"):
        parse_registry_csv(CSV, source="x.csv", chip_set="showdown-2062")


def test_toml_registry() -> None:
    data = {"chips": [
        {"uid_hex": "E000000000000001", "value_cents": 2500, "chip_set": "s", "issued_to": "E-1"},
        {"uid_hex": "E000000000000004", "value_cents": 2500, "chip_set": "s"},
    ]}
    reg = parse_registry_toml(data, source="r.toml", require_issued=False)
    assert reg.resolve({A1, FLOAT4}, entry="E-1") == (5000, ())


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        ({"chip": []}, "chip", "unknown key"),
        ({"chips": []}, "chips", "non-empty array"),
        ({"chips": [{"uid_hex": "E000000000000001", "value_cents": 1}]}, "chips[0].chip_set",
         "missing"),
        ({"chips": [{"uid_hex": "E000000000000001", "value_cents": 25.0, "chip_set": "s"}]},
         "chips[0].value_cents", "integer"),
        ({"chips": [{"uid_hex": "E000000000000001", "value_cents": True, "chip_set": "s"}]},
         "chips[0].value_cents", "integer"),
        ({"chips": [{"uid_hex": 1, "value_cents": 1, "chip_set": "s"}]}, "chips[0].uid_hex",
         "string"),
        ({"chips": [{"uid_hex": "E000000000000001", "value_cents": 1, "chip_set": "s",
                     "colour": "red"}]}, "chips[0].colour", "unknown key"),
        ({"chips": [{"uid_hex": "E000000000000001", "value_cents": 1, "chip_set": "s"},
                    {"uid_hex": "E000000000000001", "value_cents": 1, "chip_set": "s"}]},
         "chips[1].uid_hex", "already in chips[0]"),
    ],
)
def test_toml_errors_name_the_key(data: dict[str, object], key: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_registry_toml(data, source="r.toml")
    assert str(err.value).startswith(f"r.toml: {key}: ")
    assert message in str(err.value)


# ----------------------------------------------------------------------------- files


def test_read_csv_and_toml_files(tmp_path: Path) -> None:
    csv_path = tmp_path / "reg.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + CSV.encode())  # a byte-order mark is fine
    reg = read_registry(csv_path, chip_set="showdown-2026")
    assert reg.resolve({A1, A2}, entry="E-1").total_cents == 12500
    toml_path = tmp_path / "reg.toml"
    toml_path.write_text('[[chips]]\nuid_hex = "E000000000000001"\nvalue_cents = 2500\n'
                         'chip_set = "s"\n')
    assert read_registry(toml_path).resolve({A1}, entry=None).total_cents == 2500


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"reg\.json: a chip registry is a \.csv or \.toml"):
        read_registry(tmp_path / "reg.json")
    with pytest.raises(ConfigError, match=r"missing\.csv: cannot read the file"):
        read_registry(tmp_path / "missing.csv")
    bad = tmp_path / "latin.csv"
    bad.write_bytes(b"uid_hex,value_cents,chip_set\n\xe9")
    with pytest.raises(ConfigError, match=r"latin\.csv: not UTF-8"):
        read_registry(bad)
    broken = tmp_path / "broken.toml"
    broken.write_text("[[chips]\n")
    with pytest.raises(ConfigError, match=r"broken\.toml: TOML syntax error"):
        read_registry(broken)


def test_write_then_read_round_trips(tmp_path: Path, registry: ChipRegistry) -> None:
    path = tmp_path / "out" / "export.csv"
    write_registry_csv(registry, path, comment="exported for a test")
    again = read_registry(path, chip_set="showdown-2026")
    assert list(again) == list(registry)
    assert path.read_text().startswith("# exported for a test\nuid_hex,value_cents,chip_set,")


def test_the_example_registry_is_the_simulators() -> None:
    example = read_registry(REPO / "config" / "chips.example.csv", chip_set="showdown-2026")
    assert list(example) == list(build_sim_registry())
    # each simulated entry holds R2,000 (8 x R25 + 8 x R100 + 2 x R500), as the spec's buy-in
    for seat in range(1, 7):
        chips = example.issued_to(f"SIM-E{seat}")
        assert sum(c.value_cents for c in chips) == 200_000
        assert len(chips) == 18
