"""A ``--questions`` file that is not UTF-8 text (a binary file) is one clear line naming the
file, exit status 2, not Python's codec message."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitdesk.cli.main import main


@pytest.mark.parametrize("name", ["set.toml", "set.txt"])
def test_binary_questions_file_is_named_as_not_utf8(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    assert main(["bench", "--questions", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"splitdesk bench: error: {name}: cannot read: not UTF-8 text (byte 0x89 at offset 0); "
        "save the questions as UTF-8 (TOML or one question per line)"
    ]
    assert "codec" not in err
