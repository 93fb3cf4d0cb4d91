"""What re-sending a batch may cost counts its images, as the rate limiter does."""

from __future__ import annotations

from typing import Any

from jurist.batching._recover import resend_cost
from jurist.models._limits import HIGH_DETAIL_IMAGE_TOKENS, LOW_DETAIL_IMAGE_TOKENS
from jurist.runs import PriceTable


def body(*parts: dict[str, Any]) -> dict[str, Any]:
    text = {"type": "text", "text": "x" * 40}  # 10 tokens
    return {"messages": [{"role": "user", "content": [text, *parts]}], "max_tokens": 5}


def prompt_tokens(b: dict[str, Any]) -> int:
    said = resend_cost([b], 1, "openai:judge", PriceTable.default())
    return int(said.split("about ")[1].split(" prompt")[0].replace(",", ""))


def test_each_image_part_counts_at_its_detail() -> None:
    openai_auto = {"type": "image_url", "image_url": {"url": "https://x/a.png"}}
    openai_low = {"type": "image_url", "image_url": {"url": "data:,", "detail": "low"}}
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    assert prompt_tokens(body()) == 10
    assert prompt_tokens(body(openai_auto)) == 10 + HIGH_DETAIL_IMAGE_TOKENS
    assert prompt_tokens(body(openai_low)) == 10 + LOW_DETAIL_IMAGE_TOKENS
    assert prompt_tokens(body(anthropic, openai_low)) == (
        10 + HIGH_DETAIL_IMAGE_TOKENS + LOW_DETAIL_IMAGE_TOKENS
    )


def test_the_price_includes_the_images() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://x/a.png"}}
    plain = resend_cost([body()], 1000, "openai:gpt-4o-mini", PriceTable.default())
    with_image = resend_cost([body(image)], 1000, "openai:gpt-4o-mini", PriceTable.default())
    dollars = [float(s.split("about $")[1].split(" ")[0]) for s in (plain, with_image)]
    assert dollars[1] > dollars[0]
