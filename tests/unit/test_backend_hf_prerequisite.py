"""The transformers backend without torch: a clear error naming the install command."""

from __future__ import annotations

import sys

import pytest

from medgate.backends.hf import INSTALL_HINT, TransformersBackend
from medgate.backends.registry import split_spec
from medgate.config import MedgateConfig
from medgate.errors import PrerequisiteError


def test_missing_torch_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(PrerequisiteError) as info:
        TransformersBackend.from_spec("BioMistral/BioMistral-7B", MedgateConfig())
    assert INSTALL_HINT in str(info.value)
    assert INSTALL_HINT == "pip install 'medgate[transformers]'"


def test_hf_spec_names_a_path_or_model_id() -> None:
    assert split_spec("hf:/models/biomistral") == ("hf", "/models/biomistral")
    assert split_spec("hf:BioMistral/BioMistral-7B") == ("hf", "BioMistral/BioMistral-7B")
