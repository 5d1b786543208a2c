from __future__ import annotations

import json
from pathlib import Path

import pytest

from medgate.backends import FakeModel
from medgate.claims import (
    CitationStatus,
    CitationVerifier,
    EmbeddingSupportJudge,
    FlagKind,
    LexicalSupportJudge,
    LocalRecordStore,
    ModelSupportJudge,
    SourceRecord,
    SupportJudge,
    calibrate_threshold,
    check_report,
)
from medgate.claims.support import load_support_pairs
from medgate.errors import InputError, ModelError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claims"
STORE = LocalRecordStore.from_jsonl(FIXTURES / "records.jsonl")

SUPPORTED = (
    "Dapagliflozin reduced end-stage kidney disease or renal or cardiovascular death in "
    "patients with chronic kidney disease (PMID: 31535829)."
)
MISREPRESENTED = "Dapagliflozin cured migraine in 80% of children (PMID: 31535829)."
FABRICATED = "Studies show dapagliflozin prevents dementia (PMID: 11111111)."


def verify(text: str, judge: SupportJudge | None = None):  # type: ignore[no-untyped-def]
    result = check_report(text, CitationVerifier(STORE, judge or LexicalSupportJudge()))
    assert result.verification is not None
    return result


def test_local_store_loads_records() -> None:
    assert len(STORE) == 2


def test_supported_citation_passes() -> None:
    result = verify(SUPPORTED)
    (check,) = result.verification.checks
    assert check.status is CitationStatus.SUPPORTED
    assert check.evidence is not None and check.evidence.level is not None
    assert check.evidence.level.value == "II"
    assert result.flags == []


def test_real_id_cited_for_a_claim_it_does_not_make_is_unsupported() -> None:
    result = verify(MISREPRESENTED)
    (flag,) = result.flags
    assert flag.kind is FlagKind.UNSUPPORTED
    assert "numbers not in the source: 80" in flag.detail
    assert result.unsupported_count == 1


def test_unknown_id_is_unresolvable_and_unsafe() -> None:
    result = verify(FABRICATED)
    (flag,) = result.flags
    assert flag.kind is FlagKind.UNRESOLVABLE
    assert "PMID:11111111" in flag.detail
    assert not result.is_safe


def test_bracket_reference_past_the_list_is_unresolvable() -> None:
    text = (
        "Dapagliflozin reduced end-stage kidney disease in chronic kidney disease [1]. "
        "Side effects include genital infections [3].\n\n"
        "References\n1. Dapagliflozin in CKD. PMID: 31535829\n"
    )
    result = verify(text)
    kinds = [(f.sentence_index, f.kind) for f in result.flags]
    assert kinds == [(1, FlagKind.UNRESOLVABLE)]
    assert result.verification.checks[0].resolved_key == "PMID:31535829"


def test_a_reference_without_an_id_is_unchecked_not_verified() -> None:
    result = verify("Exercise helps memory [1].\n\n## References\n1. https://example.org/x\n")
    (check,) = result.verification.checks
    assert check.status is CitationStatus.UNCHECKED
    assert any("could not be checked" in w for w in result.warnings)


AUTHORED = SourceRecord(
    key="DOI:10.1056/nejmoa2032183",
    source_type="crossref",
    title="Once-Weekly Semaglutide in Adults with Overweight or Obesity",
    text="In adults with overweight or obesity, semaglutide reduced body weight by 14.9% from "
    "baseline to week 68, as compared with 2.4% with placebo.",
    url="https://doi.org/10.1056/nejmoa2032183",
    doi="10.1056/nejmoa2032183",
    authors=["Wilding", "Batterham"],
    year=2021,
)
AUTHOR_STORE = LocalRecordStore([AUTHORED])


def test_author_year_citation_resolves_by_first_author_and_year() -> None:
    text = "Semaglutide reduced body weight by 14.9% in adults with obesity (Wilding et al., 2021)."
    result = check_report(text, CitationVerifier(AUTHOR_STORE, LexicalSupportJudge()))
    assert result.verification is not None
    (check,) = result.verification.checks
    assert check.status is CitationStatus.SUPPORTED
    assert check.resolved_key == "Wilding 2021"
    assert result.unresolvable_count == 0


@pytest.mark.parametrize(
    "citation",
    ["(Wilding et al., 2019)", "(Batterham et al., 2021)", "(Smith et al., 2021)"],
)
def test_author_year_citation_without_that_work_is_unresolvable(citation: str) -> None:
    text = f"Semaglutide reduced body weight by 14.9% in adults {citation}."
    result = check_report(text, CitationVerifier(AUTHOR_STORE, LexicalSupportJudge()))
    (flag,) = result.flags
    assert flag.kind is FlagKind.UNRESOLVABLE
    assert not result.is_safe


def test_doi_citation_resolves_through_the_records_doi() -> None:
    text = "Semaglutide reduced body weight by 14.9% (doi:10.1056/NEJMoa2032183)."
    result = check_report(text, CitationVerifier(AUTHOR_STORE, LexicalSupportJudge()))
    (check,) = result.verification.checks
    assert check.status is CitationStatus.SUPPORTED
    unknown = "Semaglutide reduced body weight by 14.9% (doi:10.1056/NEJMoa9999999)."
    (flag,) = check_report(unknown, CitationVerifier(AUTHOR_STORE, LexicalSupportJudge())).flags
    assert flag.kind is FlagKind.UNRESOLVABLE


def test_offline_without_records_no_citation_resolves() -> None:
    result = check_report(SUPPORTED, CitationVerifier(LocalRecordStore(), LexicalSupportJudge()))
    (flag,) = result.flags
    assert flag.kind is FlagKind.UNRESOLVABLE
    assert "offline record store (0 records)" in flag.detail


def test_model_judge_with_fake_model() -> None:
    model = FakeModel().script_chat(
        "CLAIM:\nDapagliflozin reduced",
        '{"verdict": "supported", "reason": "The results state it."}',
    )
    model.script_chat(
        "CLAIM:\nDapagliflozin cured",
        '```json\n{"verdict": "contradicted", "reason": "About kidney disease."}\n```',
    )
    judge = ModelSupportJudge(model)
    assert verify(SUPPORTED, judge).flags == []
    (flag,) = verify(MISREPRESENTED, judge).flags
    assert flag.kind is FlagKind.UNSUPPORTED and "contradicted" in flag.detail
    assert all(kind == "chat" for kind, _ in model.calls)


def test_model_judge_garbage_fails_closed() -> None:
    model = FakeModel().script_chat("CLAIM:", "I think so, probably.", repeat=True)
    result = verify(SUPPORTED, ModelSupportJudge(model))
    (check,) = result.verification.checks
    assert check.status is CitationStatus.ERROR
    assert not result.is_safe and result.errors


def test_support_verdict_rejects_unknown_labels() -> None:
    from medgate.backends.structured import parse_reply
    from medgate.claims.support import SupportVerdict

    with pytest.raises(ModelError):
        parse_reply('{"verdict": "maybe", "reason": ""}', SupportVerdict)
    assert parse_reply('{"verdict": "Not supported"}', SupportVerdict).verdict == "not_supported"


def test_embedding_judge_with_fake_embeddings() -> None:
    record = SourceRecord(key="PMID:1", source_type="pubmed", title="T", text="A fact. Other.")
    model = FakeModel()
    model.script_embedding("claim one", [1.0, 0.0]).script_embedding("claim two", [0.0, 1.0])
    model.script_embedding("T. A fact.", [0.8, 0.6]).script_embedding("Other.", [0.6, -0.8])
    judge = EmbeddingSupportJudge(model.embed, threshold=0.75)
    first = judge.judge("claim one", record.evidence_text)
    second = judge.judge("claim two", record.evidence_text)
    assert first.supported and first.score == pytest.approx(0.8)
    assert not second.supported and second.score == pytest.approx(0.6)


def test_calibrate_threshold_by_hand() -> None:
    # thresholds 0.2 / 0.4 / 0.6 / 0.8 give F1 0.667 / 0.8 / 1.0 / 0.667 -> 0.6
    calibration = calibrate_threshold([0.2, 0.4, 0.6, 0.8], [False, False, True, True])
    assert calibration.threshold == 0.6 and calibration.f1 == 1.0
    with pytest.raises(InputError):
        calibrate_threshold([], [])


def test_default_lexical_threshold_matches_calibration_on_the_shipped_pairs() -> None:
    pairs = load_support_pairs()
    judge = LexicalSupportJudge()
    scores = [judge.score(p.claim, p.evidence)[0] for p in pairs]
    calibration = calibrate_threshold(scores, [p.supported for p in pairs])
    # the shipped default is the calibrated threshold rounded down to 0.05
    assert judge.threshold == pytest.approx(int(calibration.threshold * 20) / 20)


def test_bad_record_store_file_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text(json.dumps({"key": "PMID:1"}) + "\n{not json\n")
    with pytest.raises(InputError, match=":1:"):
        LocalRecordStore.from_jsonl(bad)
    with pytest.raises(InputError):
        LocalRecordStore.from_jsonl(tmp_path / "missing.jsonl")
