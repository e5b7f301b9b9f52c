"""The typed recommendation: built from an Advice with plain Python values, frozen, and its JSON and schema derived
from the dataclasses (`recommendation_json`), with undeclared keys refused at every level."""

import dataclasses
import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from advisor.advice.advise import advise
from advisor.advice.recommendation import SCHEMA_VERSION, Recommendation, from_advice
from advisor.advice.recommendation_json import SCHEMA_FILE, from_json, schema_text, to_json
from advisor.advice.resolve import AcceptanceInput, build_scenario

PLAIN = (str, int, float, bool, type(None))


def _recommendation(**kw) -> Recommendation:
    return from_advice(advise(build_scenario(prompt_len=kw.pop("prompt_len", 8000), out_len=kw.pop("out_len", 200),
                                             **kw)))


@pytest.fixture(scope="module")
def rec() -> Recommendation:
    return _recommendation()


def _leaves(value, path="r"):
    """(path, value) for every scalar inside a recommendation."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key!r}]")
    else:
        yield path, value


@pytest.mark.parametrize("kw", [{}, {"batch": 64}, {"method": "ngram", "acceptance": AcceptanceInput(task="code")},
                                {"k": 5, "temperature": 0.7, "acceptance": AcceptanceInput(alpha=0.8)}])
def test_every_value_is_plain_python_of_its_declared_kind(kw):
    r = _recommendation(**kw)
    for path, value in _leaves(r):
        assert type(value) in PLAIN, f"{path} is {type(value).__name__}"  # no numpy scalars
    hints = {f.name: f.type for f in dataclasses.fields(r.memory)}
    for name, value in dataclasses.asdict(r.memory).items():
        assert type(value).__name__ == hints[name], name  # floats stay floats, ints ints, bools bools
    assert r.schema_version == SCHEMA_VERSION and r.per_k[r.best_k].k == r.best_k


def test_it_is_frozen(rec):
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.best_k = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.speedup.tpot = 9.0


def test_json_round_trips_to_the_same_recommendation(rec):
    text = to_json(rec)
    assert text.startswith('{\n  "schema_version": 1,\n  "verdict": ')  # indent 2, fields in declared order
    assert from_json(text) == rec
    assert list(json.loads(text)) == [f.name for f in dataclasses.fields(Recommendation)]


@pytest.mark.parametrize("where", [(), ("speedup",), ("memory",), ("per_k", 0), ("checks", 0), ("vllm",), ("inputs",)])
def test_undeclared_keys_are_refused_at_every_level(rec, where):
    data = json.loads(to_json(rec))
    part = data
    for key in where:
        part = part[key]
    part["surprise"] = 1
    with pytest.raises(ValidationError, match="surprise"):
        from_json(json.dumps(data))


def test_missing_or_mistyped_keys_are_refused(rec):
    data = json.loads(to_json(rec))
    del data["interval"]["alpha_low"]
    with pytest.raises(ValidationError, match="alpha_low"):
        from_json(json.dumps(data))
    data = json.loads(to_json(rec))
    data["best_k"] = "three"
    with pytest.raises(ValidationError, match="best_k"):
        from_json(json.dumps(data))


def test_the_committed_schema_is_generated_from_the_dataclasses():
    assert SCHEMA_FILE.read_text() == schema_text(), "run: python -m advisor.advice.recommendation_json"
    schema = json.loads(schema_text())
    # every field is required but the ones added later with a default (additive: an older document still reads)
    assert schema["required"] == [f.name for f in dataclasses.fields(Recommendation)
                                  if f.default is dataclasses.MISSING]
    assert "comparison" in schema["properties"] and "comparison" not in schema["required"]
    assert schema["additionalProperties"] is False
    assert all(part["additionalProperties"] is False for part in schema["$defs"].values())


def test_text_and_markdown_never_load_the_json_layer():
    """Building the pydantic adapter costs ~0.2 s of start-up: only `--format json` may pay it."""
    code = ("import contextlib, io, sys\nfrom advisor.cli.app import main\n"
            "for fmt in ('text', 'markdown'):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main(['recommend', '--prompt-len', '8000', '--out-len', '200', '--format', fmt]) == 0\n"
            "assert 'advisor.advice.recommendation_json' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_json_page_lists_every_top_level_field():
    page = (SCHEMA_FILE.parent / "json.md").read_text()
    block = page.split("## The fields", 1)[1].split("```")[1]
    listed = [line.split()[0] for line in block.splitlines() if line and not line.startswith(" ")]
    assert listed == [f.name for f in dataclasses.fields(Recommendation) if f.name != "schema_version"]
