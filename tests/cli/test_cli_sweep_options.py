"""``splitdesk sweep`` names an unknown option (and the closest known one) before it
complains about a missing ``--max-n``, as ``splitdesk bench`` does."""

from __future__ import annotations

import pytest

from splitdesk.cli.main import main


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--bogus"], "unrecognized arguments: --bogus (see splitdesk sweep --help)"),
        (["--max-nn", "3"], "--max-nn (did you mean --max-n?)"),
        (["--max-n", "3", "--repeats", "2"], "--repeats (did you mean --repeat?)"),
    ],
)
def test_sweep_names_unknown_options(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", *args])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("splitdesk sweep: error:") and words in err
    assert "--max-n is" not in err and "required" not in err
    assert len(err.strip().splitlines()) == 1


def test_sweep_without_max_n_still_says_it_is_required(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sweep"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "splitdesk sweep: error: the following arguments are required: --max-n "
        "(see splitdesk sweep --help)"
    )
