"""Run a batch-API evaluation in a process of its own, for the SIGKILL tests.

``run`` (forked by tests/_forked.py), or ``python tests/_batch_kill_script.py BASE_URL
RUN_DIR DATA [RETRIES]``, judges DATA into
RUN_DIR through the Batch API of the server at BASE_URL, re-asking unreadable verdicts
RETRIES times (default 0) (see tests/batching/test_batch_resume.py).
"""

from __future__ import annotations

import sys

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions


def judge(base_url: str) -> jurist.LLMJudge:
    model = jurist.get_model("openai:judge", base_url=base_url, api_key="k", json_mode=None)
    return jurist.LLMJudge(model)


OPTIONS = BatchAPIOptions(poll_interval=0.02)


def run(base_url: str, run_dir: str, data: str, retries: str = "0") -> None:
    """Judge DATA into RUN_DIR through the Batch API at BASE_URL, RETRIES re-asks."""
    done = jurist.evaluate(
        data, judge(base_url), run_dir=run_dir, engine=BatchAPIEngine(OPTIONS), retries=int(retries)
    )
    print(done.summary().status)


if __name__ == "__main__":
    run(*sys.argv[1:5])
