"""A question set's shared context: read from the set (text or a file next to it), put
first in every prompt where the template says, the nonce line before it, one per side."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitdesk.builtin_endpoint import split_nonce_line
from splitdesk.core.bench.repeats import nonce_of, with_nonce
from splitdesk.core.run.events import RequestPlanned, RunStarted
from splitdesk.core.run.plans import chain_prompt, make_plan
from splitdesk.core.run.questions import (
    QuestionFileError,
    builtin_sets,
    dump_question_set,
    load_question_set,
    parse_question_set,
)
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate

DOC = "Clause 1. Loans last seven days.\nClause 2. Late fees start on day four."
QUESTIONS = ["How long is a loan?", "When do late fees start?", "Who runs it?"]


def test_a_set_holds_its_context_as_text_or_in_a_file_next_to_it(tmp_path: Path) -> None:
    inline = parse_question_set(
        'context = """' + DOC + '"""\n[[questions]]\ntext = "How long is a loan?"\n'
    )
    assert inline.context == DOC
    folder = tmp_path / "sets"
    folder.mkdir()
    (folder / "contract.txt").write_text(DOC, encoding="utf-8")
    path = folder / "five.toml"
    path.write_text('context_file = "contract.txt"\n[[questions]]\ntext = "Q?"\n', "utf-8")
    loaded = load_question_set(path)  # read next to the set, whatever the working folder
    assert loaded.context == DOC and loaded.context_file == "contract.txt"
    saved = dump_question_set(loaded)
    assert 'context_file = "contract.txt"' in saved and "Clause 1" not in saved  # a reference


def test_context_file_problems_are_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "set.toml"
    path.write_text('context_file = "missing.txt"\n[[questions]]\ntext = "Q?"\n', "utf-8")
    with pytest.raises(QuestionFileError) as err:
        load_question_set(path)
    assert str(err.value).startswith("set.toml: context_file 'missing.txt': cannot read")
    assert "\n" not in str(err.value)
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00binary")
    path.write_text('context_file = "bin.txt"\n[[questions]]\ntext = "Q?"\n', "utf-8")
    with pytest.raises(QuestionFileError, match="not UTF-8"):
        load_question_set(path)
    path.write_text(
        'context = "x"\ncontext_file = "bin.txt"\n[[questions]]\ntext = "Q?"\n', "utf-8"
    )
    with pytest.raises(QuestionFileError, match="not both"):
        load_question_set(path)
    with pytest.raises(QuestionFileError, match="context_as"):
        parse_question_set('[template]\ncontext_as = "left"\n[[questions]]\ntext = "Q?"\n')


def test_the_shipped_document_set_has_its_document() -> None:
    qs = builtin_sets()["document-five"]
    assert len(qs.texts) == 5
    assert qs.context.startswith("HARBOUR STREET COMMUNITY TOOL LIBRARY")
    assert len(qs.context) > 8000


def test_the_context_goes_first_in_every_prompt_once_in_the_combined_one() -> None:
    plan = make_plan("one-after-another", QUESTIONS, CombinedTemplate(), 64, context=DOC)
    combined, *parallel = plan.requests
    for spec in plan.requests:
        assert spec.prompt.startswith("<document>\n" + DOC + "\n</document>\n\n")
        assert spec.system is None and spec.context_chars == len(DOC)
        assert spec.prompt[: spec.shared_chars] == "<document>\n" + DOC + "\n</document>\n\n"
    assert combined.prompt.count("Clause 1.") == 1
    assert [p.prompt[parallel[0].shared_chars :] for p in parallel] == QUESTIONS
    system = make_plan(
        "one-after-another", QUESTIONS, CombinedTemplate(context_as="system"), 64, context=DOC
    )
    for spec in system.requests:
        assert spec.system == DOC and "Clause" not in spec.prompt
    assert [s.prompt for s in system.requests[1:]] == QUESTIONS
    plain = make_plan("parallel", QUESTIONS, CombinedTemplate(), 64)
    assert [s.prompt for s in plain.requests] == QUESTIONS and not plain.has_context


def test_each_side_gets_its_own_nonce_line_before_the_context() -> None:
    for template in (CombinedTemplate(), CombinedTemplate(context_as="system")):
        plan = make_plan("one-after-another", QUESTIONS, template, 64, context=DOC)
        sent = with_nonce(plan, "ab12cd34")
        firsts = {}
        for spec in sent.requests:
            opening = spec.system if spec.system is not None else spec.prompt
            nonce, rest = split_nonce_line(opening)
            firsts.setdefault(spec.group, set()).add(nonce)
            assert rest.startswith(("<document>", DOC))  # the line, then the document
            if spec.system is None:  # the shared opening covers the line and the context
                assert spec.prompt[: spec.shared_chars].endswith("</document>\n\n")
        assert firsts == {"combined": {"ab12cd34/combined"}, "parallel": {"ab12cd34/parallel"}}
    # without a context the run keeps one line for every prompt, as before
    plain = with_nonce(make_plan("one-after-another", QUESTIONS, CombinedTemplate(), 64), "ab")
    assert {split_nonce_line(s.prompt)[0] for s in plain.requests} == {"ab"}


def test_the_run_nonce_is_read_without_the_side() -> None:
    plan = with_nonce(
        make_plan("parallel", QUESTIONS, CombinedTemplate(context_as="system"), 8, context=DOC),
        "feed0001",
    )
    state = RunState()
    state.apply(RunStarted(0.0, "parallel", tuple(QUESTIONS), {}, 0))
    for i, spec in enumerate(plan.requests):
        state.apply(
            RequestPlanned(
                0.0, i, spec.group, spec.questions, spec.prompt, 0, 8, spec.system, len(DOC)
            )
        )
    assert nonce_of(state) == "feed0001"
    assert state.requests[0].system is not None and state.requests[0].context_chars == len(DOC)


def test_a_chained_prompt_keeps_the_shared_opening_first() -> None:
    plan = with_nonce(make_plan("chain", QUESTIONS, CombinedTemplate(), 8, context=DOC), "c")
    spec = plan.requests[1]
    chained = chain_prompt(spec.prompt, "Seven days.", spec.shared_chars)
    assert chained.startswith(spec.prompt[: spec.shared_chars])
    assert chained[spec.shared_chars :].startswith("Answer to the previous question:\nSeven days.")
    assert chained.endswith(QUESTIONS[1])
