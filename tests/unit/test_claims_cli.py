from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from medgate.cli.claims import register

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claims"


def make_app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:
        """A local app: registering one command must still give a command group."""

    return app


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(make_app(), ["check-claims", *args])
    return result.exit_code, result.output


def test_uncited_dose_is_flagged_high(tmp_path: Path) -> None:
    report = tmp_path / "answer.md"
    report.write_text("# Metformin\n\nThe recommended dose is 500 mg twice daily.\n")
    code, out = run(str(report))
    assert code == 1
    assert "[HIGH] uncited dose" in out
    assert "Verdict: UNSAFE" in out


@pytest.mark.parametrize(
    "sentence",
    [
        "The recommended dose is 500 mg twice daily (PMID: 12345678).",
        "The recommended dose is 500 mg twice daily. (PMID: 12345678)",
    ],
)
def test_cited_dose_is_not_flagged_uncited(tmp_path: Path, sentence: str) -> None:
    report = tmp_path / "answer.md"
    report.write_text(sentence + "\nMore text follows here.\n")
    code, out = run(str(report), "--json")
    data = json.loads(out)
    assert [f for f in data["flags"] if f["kind"] == "uncited"] == []
    assert data["claims_count"] == 1
    assert data["sources"][0]["label"] == "PMID:12345678"
    assert code == (0 if data["is_safe"] else 1)


def test_json_output_and_sources(tmp_path: Path) -> None:
    report = tmp_path / "answer.md"
    report.write_text(
        "Warfarin is contraindicated in pregnancy [1].\n\n## Sources\n"
        "1. https://notcdc.gov/warfarin\n"
    )
    code, out = run(str(report), "--json", "--rules-only")
    data = json.loads(out)
    # The reference is a bare URL, so the citation cannot be resolved: with the weak source
    # that makes two warnings, and two warnings make the answer unsafe.
    assert data["warnings"] == [
        "1 citation(s) could not be checked (a reference without an id, or [n] without a "
        "reference list)",
        "1 high-severity claim(s) rest only on preprints or unverified web sources",
    ]
    assert code == 1
    assert data["sources"][0]["credibility"]["tier"] == "unverified"
    assert [c["status"] for c in data["verification"]["checks"]] == ["unchecked"]


def test_the_three_sentence_answer_is_unsafe_with_its_three_flags(tmp_path: Path) -> None:
    report = tmp_path / "answer.txt"
    report.write_text(
        "Take two hundred milligrams of ibuprofen every four hours. Metformin reduces "
        "cardiovascular\nmortality by 36% in overweight patients (Smith et al., 2019). You "
        "should stop taking your blood\npressure medication if you feel dizzy.\n"
    )
    code, out = run(str(report), "--json", "--rules-only")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "unsafe"
    kinds = {(f["kind"], f["claim_type"], f["severity"]) for f in data["flags"]}
    assert ("uncited", "dose", "high") in kinds
    assert ("uncited", "medication_change", "high") in kinds
    assert any(kind == "unresolvable" for kind, _, _ in kinds)
    assert data["dose_information"] is True


def test_records_store_verifies_citations(tmp_path: Path) -> None:
    report = tmp_path / "answer.txt"
    report.write_text("Studies show dapagliflozin prevents dementia (PMID: 11111111).\n")
    code, out = run(str(report), "--records", str(FIXTURES / "records.jsonl"))
    assert code == 1
    assert "unresolvable study" in out
    assert "Citation verification (lexical)" in out


def test_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    code, out = run(str(tmp_path / "nope.md"))
    assert code == 2
    assert "is not a file" in out


def test_a_report_that_is_not_utf8_is_a_clean_error(tmp_path: Path) -> None:
    report = tmp_path / "answer.txt"
    report.write_bytes(b"The dose is \xff\xfe 5 mg.\n")
    code, out = run(str(report))
    assert code == 2
    assert "not UTF-8" in out
