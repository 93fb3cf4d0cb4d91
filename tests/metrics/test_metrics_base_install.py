"""``jurist agreement`` and the report's agreement on the base install (issue 21, item 2).

The CLI runs in a subprocess where importing scipy, scikit-learn or krippendorff fails (a
meta-path finder installed before jurist is imported), as on ``pip install jurist``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jurist

SRC = Path(jurist.__file__).resolve().parents[1]

BLOCKED_MAIN = """
import sys

class Blocker:
    BLOCKED = ("scipy", "sklearn", "krippendorff")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.BLOCKED:
            raise ImportError(f"{name} is blocked: not on the base install")
        return None

sys.meta_path.insert(0, Blocker())
for name in list(sys.modules):
    if name.split(".")[0] in Blocker.BLOCKED:
        del sys.modules[name]
from jurist.cli import main
code = main(sys.argv[1:])
assert not any(m.split(".")[0] in Blocker.BLOCKED for m in sys.modules), "a blocked module loaded"
sys.exit(code)
"""


def base_install(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_MAIN, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_blocker_blocks() -> None:
    probe = "import scipy.stats"
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_MAIN.split("from jurist.cli")[0] + probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "ImportError: scipy is blocked" in done.stderr


def test_agreement_with_intervals_without_scipy_sklearn_krippendorff(tmp_path: Path) -> None:
    stars = [1, 2, 3, 4, 5, 3, 2, 4, 5, 1]
    said = [f"Score: {s}" for s in [1, 2, 3, 5, 5, 2, 2, 4, 4, 1]]
    items = [{"prompt": f"q{i}", "response": "a", "stars": s} for i, s in enumerate(stars)]
    judge = jurist.LLMJudge(jurist.get_model("mock:j", outputs=said), template="likert")
    jurist.evaluate(items, judge, run_dir=tmp_path / "run")

    done = base_install("agreement", str(tmp_path / "run"), "--labels", "stars")
    out = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stderr
    assert "agreement (ordinal)" in out
    for name in ("quadratic_kappa", "spearman", "kendall_tau", "krippendorff_alpha"):
        # each figure with its 95% interval: value [low, high]
        assert re.search(rf"{name}\W+-?\d\.\d+\W+\[-?\d\.\d+, -?\d\.\d+\]", out), (name, out)

    done = base_install("report", str(tmp_path / "run"), "--labels", "stars")
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "run" / "report.html").read_text()
    assert "quadratic_kappa" in html and "bootstrap intervals" in html
    assert "optional package" not in html
