"""``splitdesk --endpoint URL --api … --model … --api-key-env …``: the window's endpoint for
this session, chosen with the words of ``splitdesk bench``; bad input is a one-line error
before any window opens."""

from __future__ import annotations

import pytest

from splitdesk.app import WindowEndpoint
from splitdesk.cli.main import build_parser, main, window_endpoint
from splitdesk.core.run.endpoints import EndpointSettings, KeySource


def parsed(argv: list[str]) -> WindowEndpoint | None:
    parser = build_parser()
    args, _ = parser.parse_known_args(argv)
    return window_endpoint(args, parser)


def test_the_window_takes_bench_words_for_its_endpoint() -> None:
    bench = {
        a.dest: a.help
        for a in build_parser()._subparsers._group_actions[0].choices["bench"]._actions
    }  # type: ignore[union-attr]
    window = {a.dest: a.help for a in build_parser()._actions}
    for name in ("endpoint", "api", "model", "api_key_env"):
        assert window[f"gui_{name}"] == bench[name]  # one set of words for both
    chosen = parsed(
        ["--endpoint", "http://127.0.0.1:8080/v1", "--api", "openai-chat", "--model", "m"]
    )
    assert chosen == WindowEndpoint("http://127.0.0.1:8080/v1", "openai-chat", "m", None)
    assert parsed([]) is None
    assert parsed(["--endpoint", "builtin"]) == WindowEndpoint("builtin")


def test_the_session_endpoint_keeps_the_saved_settings_it_does_not_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved = EndpointSettings(max_tokens=64, read_timeout=42.0)
    # a preset's own URL picks the preset; the model is the one named
    s = WindowEndpoint("http://localhost:8080/v1", model="tiny").settings(saved)
    assert (s.preset, s.base_url, s.api, s.model) == (
        "llamacpp",
        "http://localhost:8080/v1",
        "openai-chat",
        "tiny",
    )
    assert (s.max_tokens, s.read_timeout) == (64, 42.0)
    assert s.key_source is KeySource.NONE  # no key variable set: no key
    # another URL is a custom endpoint; without --model its model is asked when it opens
    s = WindowEndpoint("http://gpu-box:8000/v1").settings(saved)
    assert (s.preset, s.model) == ("custom", "")
    # the dialect's usual variable when it is set, as bench; a named one always
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    s = WindowEndpoint("https://api.anthropic.com", "anthropic", "claude").settings(saved)
    assert (s.key_source, s.key_env) == (KeySource.ENV, "ANTHROPIC_API_KEY")
    monkeypatch.setenv("MY_KEY", "k")
    s = WindowEndpoint("http://x:1/v1", api_key_env="MY_KEY").settings(saved)
    assert (s.key_source, s.key_env) == (KeySource.ENV, "MY_KEY")
    assert "sk-test" not in s.model_dump_json() and 'k"' not in s.model_dump_json()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--model", "m"], "--model goes with --endpoint URL"),
        (["--api", "tgi", "--model", "m"], "--api, --model go with --endpoint URL"),
        (["--endpoint", "ftp://x"], "--endpoint 'ftp://x': the URL must start with http://"),
        (["--endpoint", "http://x:1/v1", "--profile", "batching"], "are for the built-in"),
        (["--endpoint", "http://x:1/v1", "--api-key-env", "NOPE_23_X"], "is not set"),
        (["--endpoint", "builtin", "--api-key-env", "HOME"], "takes no key"),
    ],
)
def test_bad_endpoint_options_are_one_line_errors(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err
