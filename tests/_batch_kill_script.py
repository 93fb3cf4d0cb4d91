"""Run a batch-API evaluation in a process of its own, for the SIGKILL tests.

``python tests/_batch_kill_script.py BASE_URL RUN_DIR DATA [RETRIES]`` judges DATA into
RUN_DIR through the Batch API of the server at BASE_URL, re-asking unreadable verdicts
RETRIES times (default 0) (see tests/test_batch_resume.py).
"""

from __future__ import annotations

import sys

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions


def judge(base_url: str) -> jurist.LLMJudge:
    model = jurist.get_model("openai:judge", base_url=base_url, api_key="k", json_mode=None)
    return jurist.LLMJudge(model)


OPTIONS = BatchAPIOptions(poll_interval=0.02)

if __name__ == "__main__":
    base_url, run_dir, data = sys.argv[1:4]
    retries = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    run = jurist.evaluate(
        data, judge(base_url), run_dir=run_dir, engine=BatchAPIEngine(OPTIONS), retries=retries
    )
    print(run.summary().status)
