"""``jurist serve-reward``: a judge as an HTTP reward service (OpenRLHF's remote reward model)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.cli._help import template_help
from jurist.cli._model_options import ModelOptions, model_options
from jurist.errors import ConfigError
from jurist.judges import LLMJudge, RewardModelJudge
from jurist.rewards._judge_reward import DEFAULT_TOLERANCE
from jurist.rewards._reward_judge import RewardJudge

__all__ = ["reward_judge", "serve_reward"]


def reward_judge(
    options: ModelOptions,
    *,
    template: str | None,
    judge: str | None,
    catalog_dir: Path | None = None,
    failure_value: float = 0.0,
    tolerance: float = DEFAULT_TOLERANCE,
    retries: int = 0,
    max_tokens: int | None = None,
) -> RewardJudge:
    """The server's judge from the command line (the one place it is built).

    ``--template`` (default ``reward``) with ``--model``; or ``--judge`` (a catalog judge,
    its template and settings), whose model ``--model`` replaces when given. ``--timeout``
    bounds each judgment, retries included.
    """
    if template is not None and judge is not None:
        raise ConfigError("--template and --judge exclude each other: give one")
    if judge is not None:
        from jurist import catalog

        found = catalog.get(judge, root=catalog_dir)
        if isinstance(found, RewardModelJudge):
            model = options.build() if options.models else options.rebuild(found.model)
            return RewardJudge(
                found.with_options(
                    model=model,
                    pairwise=False,
                    concurrency=options.concurrency,
                    max_calls_per_min=None,
                ),
                failure_value=failure_value,
                retries=retries,
                timeout=options.timeout,
            )
        if not isinstance(found, LLMJudge):
            raise ConfigError(
                f"--judge {judge!r} is a {type(found).__name__}, not a judge (a judges.* entry)"
            )
        changes: dict[str, object] = {"concurrency": options.concurrency}
        # --model replaces the entry's model; without it the entry's is built again
        # through the model flags (its server holds; the key, retries, cache are these)
        if options.models:
            changes["model"] = options.build()
        else:
            changes["model"] = options.rebuild(found.model)
            changes["max_calls_per_min"] = None  # the entry's rate is in the rebuilt model
        if max_tokens is not None:
            changes["max_tokens"] = max_tokens
        base = found.with_options(**changes)
    else:
        model = options.build()
        if model.capabilities.scalar:  # a reward model: its reward is the judge's score
            if template is not None or max_tokens is not None:
                raise ConfigError(
                    f"--template and --max-tokens apply to a judge that writes text; "
                    f"{model.spec} is a scalar reward model"
                )
            return RewardJudge(
                RewardModelJudge(model, concurrency=options.concurrency),
                failure_value=failure_value,
                retries=retries,
                timeout=options.timeout,
            )
        base = LLMJudge(
            model,
            template=template or "reward",
            temperature=options.temperature,
            max_tokens=max_tokens,
            concurrency=options.concurrency,
        )
    return RewardJudge(
        base,
        failure_value=failure_value,
        tolerance=tolerance,
        retries=retries,
        timeout=options.timeout,
    )


@app.command("serve-reward")
@model_options(
    concurrency=256,
    concurrency_help="Judgments in flight at once, across all requests.",
    timeout_help="Seconds per judgment, retries included; a slower one gets --failure-value.",
    cache=False,
    temperature_help="Judge sampling temperature (with --template).",
)
def serve_reward(
    template: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help=template_help("single", "Judge template (default: reward). Excludes --judge."),
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="A catalog judge instead of --template; --model replaces its model."),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind; 0.0.0.0 exposes the server to the network.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(**bounded("port", help="Port; 0 picks a free one."))] = 8000,
    failure_value: Annotated[
        float,
        typer.Option(
            **bounded(
                "failure_value", help="Reward of a judgment that failed or timed out (flagged)."
            )
        ),
    ] = 0.0,
    retries: Annotated[
        int, typer.Option(**bounded("retries", help="Re-asks for an unreadable verdict."))
    ] = 0,
    tolerance: Annotated[
        float,
        typer.Option(
            **bounded(
                "tolerance", help="How far outside [0, 1] a reward-template score is clamped."
            )
        ),
    ] = DEFAULT_TOLERANCE,
    max_tokens: Annotated[
        int | None,
        typer.Option(**bounded("max_tokens", help="Tokens per verdict (default: the template's).")),
    ] = None,
    catalog_dir: Annotated[
        Path | None, typer.Option("--catalog", help="User catalog folder (else $JURIST_CATALOG).")
    ] = None,
    batch_window: Annotated[
        float,
        typer.Option(
            **bounded(
                "batch_window",
                help="Milliseconds a batch stays open: the items of requests arriving within "
                "it are judged as one batch (0: those arriving in one event-loop turn).",
            )
        ),
    ] = 2.0,
    group_template: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help=template_help("pairwise", "Pairwise template of POST /v1/group_rewards."),
        ),
    ] = "mt_bench_pair",
    max_pairs: Annotated[
        int | None,
        typer.Option(**bounded("max_pairs", help="Pairs judged per group (default: all).")),
    ] = None,
    *,
    options: ModelOptions,
) -> int:
    """Serve a judge as rewards: POST /get_reward (OpenRLHF), POST /slime, POST /v1/rewards,
    POST /v1/group_rewards, GET /health, GET /metrics. SIGTERM finishes the requests in
    flight, then exits.

    A body that is not the documented shape, is nested past 64 levels or asks for over
    100,000 samples gets HTTP 400 (413 past 256 MiB). Bodies carry text only: no request
    makes the server read a local file (docs/security.md)."""
    from jurist.judges import PairwiseJudge
    from jurist.rewards._group import GroupReward
    from jurist.rewards._server import RewardService
    from jurist.rewards._server_app import serve

    rj = reward_judge(
        options,
        template=template,
        judge=judge,
        catalog_dir=catalog_dir,
        failure_value=failure_value,
        tolerance=tolerance,
        retries=retries,
        max_tokens=max_tokens,
    )
    group: GroupReward | None = None
    if not rj.scalar:  # a scalar reward model scores each completion alone: no pairs
        pairwise = PairwiseJudge(
            rj.judge.model, template=group_template, concurrency=options.concurrency
        )
        group = GroupReward(
            pairwise, max_pairs=max_pairs, failure_value=failure_value, retries=retries
        )
    service = RewardService(
        rj, concurrency=options.concurrency, batch_window=batch_window / 1000, group=group
    )

    def ready(url: str) -> None:
        print(
            f"serving rewards on {url} (model {rj.judge.model.spec}, "
            f"template {rj.kind_name}); SIGTERM or Ctrl-C stops",
            flush=True,
        )

    # queued judgments wait for the bound, then each may take --timeout
    grace = 2 * options.timeout + 5.0
    # this process is only the server: its startup heap is frozen out of the collector's way
    asyncio.run(
        serve(
            service,
            host=host,
            port=port,
            on_ready=ready,
            shutdown_timeout=grace,
            freeze_heap=True,
        )
    )
    print("reward server stopped", file=sys.stderr, flush=True)
    return EXIT_OK
