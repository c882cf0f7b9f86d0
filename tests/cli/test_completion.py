"""`showdown completion bash|zsh|fish`: the scripts load in the real shells and complete
the real parser's commands, subcommands, options and choices."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cli.completion import completion_table, script
from cli.main import COMMANDS, build_parser, main


def _script(shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["completion", shell]) == 0
    path = tmp_path / f"showdown.{shell}"
    path.write_text(capsys.readouterr().out)
    return path


def _bash(path: Path, *words: str) -> list[str]:
    """What bash offers after `words` (the last one is the word being completed)."""
    line = " ".join(f"'{w}'" for w in words)
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c",
         f'source "$1" && COMP_WORDS=({line}) && COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))'
         ' && _showdown && printf "%s\\n" "${COMPREPLY[@]}"', "bash", str(path)],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == ""
    return [w for w in done.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_subcommands_options_and_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _script("bash", tmp_path, capsys)
    every = _bash(path, "showdown", "")
    assert set(COMMANDS) <= set(every) and "--version" in every
    assert _bash(path, "showdown", "de") == ["demo", "desk", "devices"]
    assert _bash(path, "showdown", "desk", "sta") == ["staff"]
    assert "add" in _bash(path, "showdown", "desk", "staff", "")
    assert _bash(path, "showdown", "demo", "--deck", "f") == ["factory"]
    assert _bash(path, "showdown", "completion", "") == ["--help", "bash", "zsh", "fish"]
    # An option's value is not taken for a subcommand: `--config desk` stays a file name.
    assert _bash(path, "showdown", "journal", "rotate", "--config", "x", "--wh") == ["--why"]
    (tmp_path / "table.toml").write_text("")
    assert _bash(path, "showdown", "table", "run", "--config", str(tmp_path / "tab")) == [
        str(tmp_path / "table.toml")]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_from_the_same_table(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = _script("fish", tmp_path, capsys)

    def offered(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"],
                              capture_output=True, text=True, timeout=60, check=True)
        return [w.split("\t")[0] for w in done.stdout.splitlines()]

    assert offered("showdown de") == ["demo", "desk", "devices"]
    assert offered("showdown desk sta") == ["staff"]
    assert offered("showdown demo --deck f") == ["factory"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_offers_the_words_of_the_command_typed(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # zsh's completion system needs a terminal; its compadd and _files are replaced by
    # functions that print what the script offers (zsh itself filters by the prefix).
    path = _script("zsh", tmp_path, capsys)
    probe = ('compdef() { :; }; compadd() { [[ $1 == -- ]] && shift; print -r -- "$*"; };'
             ' _files() { print FILES; }; source "$1"; shift; words=("$@"); CURRENT=$#words;'
             ' _showdown')

    def offered(*words: str) -> str:
        done = subprocess.run(["zsh", "-f", "-c", probe, "zsh", str(path), *words],
                              capture_output=True, text=True, timeout=60, check=True)
        assert done.stderr == ""
        return done.stdout.strip()

    assert offered("showdown", "desk", "staff", "").split()[:2] == ["add", "list"]
    assert offered("showdown", "demo", "--deck", "") == "shuffled factory riffle repeated"
    assert offered("showdown", "demo", "--keep", "") == "FILES"


def test_the_table_holds_every_command_path_of_the_parser() -> None:
    table = completion_table(build_parser())
    assert table.subcommands["showdown"] == list(COMMANDS)
    assert "showdown desk staff add" in table.words
    assert table.values["showdown demo/--deck"] == "shuffled factory riffle repeated"
    with pytest.raises(ValueError, match="powershell"):
        script("powershell", table)
