"""An OpenAI grader as a reward inside the real ``trl`` package's GRPOTrainer."""

from __future__ import annotations

from pathlib import Path

import pytest

from jurist.compat.openai_graders import grader_reward

GRADER = {  # the guide's multigrader shape: a string check and a text similarity, combined
    "type": "multi",
    "graders": {
        "differs": {
            "name": "differs",
            "type": "string_check",
            "operation": "ne",
            "input": "{{ sample.output_text }}",
            "reference": "{{ item.answer }}",
        },
        "echo": {
            "name": "echo",
            "type": "text_similarity",
            "evaluation_metric": "fuzzy_match",
            "input": "{{ item.answer }}",
            "reference": "{{ item.answer }}",
        },
    },
    "calculate_output": "0.5 * differs + 0.25 * echo",
}


@pytest.mark.filterwarnings("ignore:`(is_)?gradient_checkpointing.*` is deprecated:FutureWarning")
def test_grpo_trainer_with_a_grader_reward(tiny_model_dir: Path, tmp_path: Path) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    reward = grader_reward(GRADER, name="openai_grader")
    data = Dataset.from_dict(
        {
            "prompt": [
                [{"role": "user", "content": "Capital of France?"}],
                [{"role": "user", "content": "2+2?"}],
            ],
            "answer": [
                "Paris, the capital of France, on the Seine",
                "four, the sum of two and two",
            ],
        }
    )
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        max_steps=2,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=4,
        logging_steps=1,
        learning_rate=1e-4,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        eval_strategy="no",
        log_completions=False,
        dataloader_num_workers=0,
        seed=0,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)),
        reward_funcs=[reward],
        args=config,
        train_dataset=data,
        processing_class=AutoTokenizer.from_pretrained(str(tiny_model_dir)),
    )
    trainer.train()
    steps = [log for log in trainer.state.log_history if "rewards/openai_grader/mean" in log]
    assert len(steps) == 2
    # 4 generated tokens never spell the long answer: differs = 1, echo = 1
    assert all(log["rewards/openai_grader/mean"] == 0.75 for log in steps)
