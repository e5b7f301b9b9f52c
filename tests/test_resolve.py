"""Names and flags to a Scenario: the default draft a user would pick, and refusals that name what the user typed."""

import pytest

from advisor.errors import InputError
from advisor.profiles.catalog import load_model
from advisor.resolve import build_scenario, default_draft


@pytest.mark.parametrize("target, draft", [
    ("llama-3.1-8b-instruct", "llama-3.2-1b-instruct"),
    ("meta-llama-3-8b-instruct", "llama-3.2-1b-instruct"),  # same vocabulary and family, though another release
    ("gemma-2-9b-it", "gemma-2-2b-it"),  # no draft an eighth of its size: the family's smallest
    ("llama-3.3-70b-instruct", "llama-3.1-8b-instruct"),
])
def test_the_default_draft_is_the_one_a_user_would_pair(target, draft):
    assert default_draft(load_model(target), "draft_model") == draft


def test_a_plans_tensor_parallel_is_named_as_the_plan_names_it():
    with pytest.raises(InputError, match=r"^tensor_parallel = 3 \(deployment 'x'\) must divide the attention heads"):
        build_scenario(prompt_len=100, out_len=100, num_gpus=3, tp_flag="tensor_parallel = 3 (deployment 'x')")
    with pytest.raises(InputError, match=r"^--num-gpus 3 must divide"):
        build_scenario(prompt_len=100, out_len=100, num_gpus=3)
