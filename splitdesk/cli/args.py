"""Arguments more than one command shares: the one-line error parser, window sizes, the
bench options (``splitdesk bench`` and ``splitdesk sweep``), the dialect list."""

from __future__ import annotations

import argparse
import difflib
from typing import NoReturn

from splitdesk.dialects import API_NAMES


def window_size(text: str) -> tuple[int, int]:
    """argparse type for ``WxH`` (pixels, each 320–10000)."""
    w, sep, h = text.lower().partition("x")
    if not (sep and w.isdigit() and h.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected WIDTHxHEIGHT, e.g. 1280x720")
    size = (int(w), int(h))
    if not all(320 <= v <= 10000 for v in size):
        raise argparse.ArgumentTypeError(f"{text!r}: each side must be 320-10000 pixels")
    return size


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2) instead of usage dumps."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    return [o for action in parser._actions for o in action.option_strings if o.startswith("--")]


def unknown_options_message(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """The one-line error for options ``parser`` does not know, suggesting the closest
    known option for each (``difflib``), e.g. ``--max-token`` → ``--max-tokens``."""
    known = options_of(parser)
    parts = []
    for arg in unknown:
        name = arg.split("=", 1)[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        parts.append(f"{arg} (did you mean {close[0]}?)" if close else arg)
    return f"unrecognized arguments: {' '.join(parts)}"


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


#: The endpoint options' words, one set for ``splitdesk bench``/``sweep`` and the window.
ENDPOINT_HELP = "'builtin' (default) or the base URL the dialect's client takes"
API_HELP = "API dialect (default openai-chat)"
MODEL_HELP = "model name (default: the endpoint's only model)"
KEY_ENV_HELP = "environment variable holding the API key"


def add_endpoint_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--endpoint``, ``--api``, ``--model``, ``--api-key-env`` for the window, with the
    words of ``splitdesk bench`` (dests ``gui_endpoint``, ``gui_api``, ``gui_model``,
    ``gui_api_key_env``: a subcommand's own options keep their names). For this session
    only: the endpoint saved in the settings stays."""
    p.add_argument("--endpoint", dest="gui_endpoint", metavar="URL", help=ENDPOINT_HELP)
    p.add_argument("--api", dest="gui_api", choices=API_NAMES, help=API_HELP)
    p.add_argument("--model", dest="gui_model", metavar="NAME", help=MODEL_HELP)
    p.add_argument("--api-key-env", dest="gui_api_key_env", metavar="NAME", help=KEY_ENV_HELP)


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``splitdesk bench`` (DESIGN.md, "The headless contract")."""
    from splitdesk.sim.params import DEFAULT_PROFILE, PROFILES

    p.add_argument("--endpoint", default="builtin", help=ENDPOINT_HELP)
    p.add_argument("--api", default="openai-chat", choices=API_NAMES, help=API_HELP)
    p.add_argument("--model", help=MODEL_HELP)
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        choices=list(PROFILES),
        help="built-in endpoint profile",
    )
    p.add_argument(
        "--sim-param",
        action="append",
        default=[],
        metavar="NAME=V",
        help="override a built-in endpoint parameter, e.g. speed=4 "
        "(repeatable; see splitdesk sim --help)",
    )
    p.add_argument(
        "-q",
        "--question",
        action="append",
        dest="questions",
        default=[],
        metavar="TEXT",
        help="a question (repeat for several; default: five everyday questions)",
    )
    p.add_argument(
        "--questions",
        dest="questions_file",
        metavar="FILE",
        help="question-set file (TOML or one per line)",
    )
    p.add_argument(
        "--context",
        dest="context_file",
        metavar="FILE",
        help="a shared context: the document every question is about (UTF-8 text), sent "
        "first in every prompt (default: the question set's own context, if any)",
    )
    p.add_argument(
        "--context-as",
        choices=["user", "system"],
        help="where the context goes: the start of the user message (default, every "
        "dialect) or a system message (the question set's template may choose)",
    )
    p.add_argument(
        "--cache-control",
        action="store_true",
        default=None,
        help="Anthropic: mark the context as a cache breakpoint (cache_control)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        metavar="N",
        help="cap per answer (the combined request gets N × questions)",
    )
    p.add_argument(
        "--mode",
        default="all",
        choices=["combined", "parallel", "sequential", "all", "dependent"],
        help="which way(s) to send the questions (default all: one after another; "
        "dependent: combined, then the chain where each request carries the previous answer)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="run every mode K times (medians reported)",
    )
    p.add_argument(
        "--json", dest="json_path", metavar="PATH|-", help="write the JSON document (- for stdout)"
    )
    p.add_argument(
        "--record",
        dest="record_path",
        metavar="FILE",
        help="save every run as a recording (replay it with: splitdesk replay FILE; "
        "gzip-compressed when FILE ends in .gz)",
    )
    p.add_argument("--api-key-env", metavar="NAME", help=KEY_ENV_HELP)
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    p.add_argument("--seed", type=int, help="sampling seed sent with every request")
    p.add_argument(
        "--read-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="longest silence between reads (s)",
    )
    p.add_argument(
        "--connect-timeout", type=float, default=10.0, metavar="S", help="connect timeout (s)"
    )
    p.add_argument(
        "--retry-429", type=int, default=0, metavar="N", help="retry a 429 up to N times"
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="open connections inside the timed phase, as a plain script does (default: "
        "warm every connection before a phase)",
    )
    p.add_argument(
        "--release",
        default="barrier",
        choices=["barrier", "as-scheduled"],
        help="send a phase's requests together from one barrier (default) or each as the "
        "event loop schedules it, as a plain script does",
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=0,
        metavar="W",
        help="run W discarded warm-up rounds first (default 0)",
    )
    p.add_argument(
        "--pause", type=float, default=0.0, metavar="S", help="wait S seconds between runs"
    )
    nonce = p.add_mutually_exclusive_group()
    nonce.add_argument(
        "--nonce",
        dest="nonce",
        action="store_true",
        default=None,
        help="open every run's prompts with a fresh nonce (default: on when --repeat > 1 "
        "or there is a shared context)",
    )
    nonce.add_argument(
        "--no-nonce",
        dest="nonce",
        action="store_false",
        help="send identical prompts every run (the server's prefix cache may serve them)",
    )
    p.add_argument(
        "--price-in",
        type=float,
        metavar="P",
        help="price per million prompt tokens (with --price-out: each side's cost from usage)",
    )
    p.add_argument("--price-out", type=float, metavar="P", help="price per million output tokens")
    p.add_argument(
        "--price-cached",
        type=float,
        metavar="P",
        help="price per million prompt tokens read from the server's cache (default: --price-in)",
    )
    tls = p.add_mutually_exclusive_group()
    tls.add_argument("--ca-bundle", metavar="FILE", help="verify TLS with this CA bundle")
    tls.add_argument(
        "--insecure", action="store_true", help="do not verify TLS certificates (unsafe)"
    )
