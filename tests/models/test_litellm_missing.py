"""The litellm backend without the litellm package: a clear error naming the extra.

Kept apart from test_litellm_backend.py, which is skipped where litellm is not installed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from jurist.errors import MissingDependencyError
from jurist.models import get_model


def test_missing_litellm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'jurist\[litellm\]'") as info:
        get_model("litellm:openai/x")
    assert info.value.extra == "litellm" and "litellm: backend" in str(info.value)


def test_import_jurist_does_not_import_litellm() -> None:
    code = (
        "import sys, jurist, jurist.models, jurist.models._litellm; "
        "print('litellm' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
