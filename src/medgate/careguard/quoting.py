"""Quoting a patient's text inside a CareGuard prompt so that the text cannot close the quote.

Prompts fence the question and the draft between ``<<<`` and ``>>>`` lines and tell the model
that what is inside is data. A question that itself contains ``>>>`` could end the fence early
and go on as if it were the prompt's own instructions. Inside the fence, every run of three or
more angle brackets is therefore written with the single angle quotation marks ``‹`` and ``›``,
which read the same to a person and cannot form the fence. Text without such runs is unchanged.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<<<", ">>>"
_RUN = re.compile(r"<{3,}|>{3,}")


def neutralise_fences(text: str) -> str:
    """``text`` with every run of 3+ ``<`` or ``>`` replaced by as many ``‹`` or ``›``."""
    return _RUN.sub(lambda m: ("‹" if m.group(0)[0] == "<" else "›") * len(m.group(0)), text)


def quote_block(text: str) -> str:
    """``text`` fenced for a prompt: an opening line, the text, a closing line."""
    return f"{OPEN}\n{neutralise_fences(text)}\n{CLOSE}"
