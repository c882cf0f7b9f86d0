"""`showdown desk` identity actions (issue 13) on SQLite and PostgreSQL: the payment method
required, a held registration listed and decided by a supervisor, a document added, a
disqualification sending `unseat`, and the fees by method."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.desk.table_answers import EXIT_HELD
from cli.errors import EXIT_ERROR, EXIT_REFUSED
from tests.cli.test_desk import ADULT, Desk, central, run  # noqa: F401 (the fixtures)


def test_payment_is_required_and_fees_are_listed(run: Desk) -> None:  # noqa: F811
    pid = run.json("register", *ADULT)["patron_id"]
    for wrong, says in ((("--patron", pid), "the following arguments are required: --payment"),
                        (("--patron", pid, "--payment", "cheque"), "invalid choice: 'cheque'")):
        with pytest.raises(SystemExit) as usage:
            run("buy", *wrong)
        assert usage.value.code == EXIT_ERROR
        assert says in run.capsys.readouterr().err
    code, out, _ = run("buy", "--patron", pid, "--payment", "value_chips")
    assert code == 0 and "(R100.00, paid in value_chips)" in out
    run("buy", "--patron", pid, "--payment", "cash")
    code, out, _ = run("fees")
    assert (code, out) == (0, "cash: 1 entries, R100.00\nvalue_chips: 1 entries, R100.00\n"
                              "total: R200.00\n")


def test_a_possible_match_is_held_listed_and_approved_by_a_supervisor(
        run: Desk, tmp_path: Path) -> None:  # noqa: F811
    listed = tmp_path / "nrgp.csv"
    listed.write_text("id_number,name,birth_date\n7705055009087,Thabo Mokoena,1980-01-01\n")
    assert run("import-list", "self_exclusion", str(listed), "--source", "NRGP", "--date",
               "2026-07-01")[0] == 0
    code, out, _ = run("register", *ADULT)  # another ID number, the same name and birth date
    assert code == EXIT_HELD and "HELD for a supervisor's decision" in out
    pid = out.split()[1]
    code, _, err = run("buy", "--patron", pid, "--payment", "cash")
    assert code == EXIT_REFUSED and "held for a supervisor's decision (hold 1)" in err
    code, out, _ = run("holds", "--open")
    assert code == 0 and out.startswith(f"hold 1 patron {pid} (registration):") and "OPEN" in out
    code, _, err = run("hold", "approve", "1")
    assert code == EXIT_ERROR and "say why" in err
    code, _, err = run("staff", "add", "--staff-id", "C-day", "--name", "Day Clerk", "--role",
                       "clerk", "--passphrase-file", str(run.passphrase))
    assert code == 0, err
    run.login("C-day")
    code, _, err = run.bare("hold", "approve", "1", "--why", "ID photo differs")
    assert code == EXIT_REFUSED and "needs a supervisor or manager" in err
    run.login()
    code, _, err = run("staff", "add", "--staff-id", "S-night", "--name", "Night Supervisor",
                       "--role", "supervisor", "--passphrase-file", str(run.passphrase))
    assert code == 0, err
    run.login("S-night")
    code, out, _ = run.bare("hold", "approve", "1", "--why", "ID photo differs")
    assert code == 0 and "approved by S-night" in out and "ID photo differs" in out
    run.login()
    assert run("holds", "--open")[1] == "no holds\n"
    assert run("buy", "--patron", pid, "--payment", "cash")[0] == 0
    code, out, _ = run("document", "add", "--patron", pid, "--kind", "passport", "--number",
                       "A 1234 567")
    assert (code, out) == (0, f"passport A1234567 recorded for patron {pid}\n")


def test_disqualify_sends_unseat_for_a_seated_entry(run: Desk) -> None:  # noqa: F811
    pid = run.json("register", *ADULT)["patron_id"]
    entry = run.json("buy", "--patron", pid, "--payment", "cash")["entry_id"]
    assert run("open-heat", "--table", "t01", "--stage", "qualifying")[0] == 0
    assert run("seat", "--entry", entry, "--table", "t01", "--seat", "2")[0] == 0
    code, _, err = run("disqualify", "--patron", pid)
    assert code == EXIT_ERROR and "say why the patron is disqualified" in err
    code, out, _ = run("disqualify", "--patron", pid, "--why", "collusion")
    assert code == 0 and f"entry {entry} to leave its seat (unseat sent)" in out
    assert [c.command for c in run.sender.commands] == ["open_heat", "seat", "unseat"]
    code, _, err = run("buy", "--patron", pid, "--payment", "cash")
    assert code == EXIT_REFUSED and "disqualified (rule 57): collusion" in err
