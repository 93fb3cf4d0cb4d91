"""A tiny hybrid thinker for the thinking tests: ``build_tiny_model(thinking=True)`` with
its matrices drawn wide enough (std 0.3) that greedy text varies from token to token."""

from __future__ import annotations

from pathlib import Path

from jurist.testing import build_tiny_model


def build_thinker(out_dir: Path, *, seed: int) -> Path:
    """The thinker in ``out_dir``, its 2-D weights redrawn under ``seed``."""
    import torch
    from transformers import AutoModelForCausalLM

    out = build_tiny_model(out_dir, thinking=True)
    model = AutoModelForCausalLM.from_pretrained(out)
    torch.manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 2:
                torch.nn.init.normal_(param, std=0.3)
    model.save_pretrained(out)
    return out
