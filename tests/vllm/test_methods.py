import pytest

from advisor.errors import InputError
from advisor.vllm.methods import MODELLED, MTP_ALIASES, NOT_MODELLED, canonical


def test_vllms_mtp_aliases_are_mtp():
    assert canonical("deepseek_mtp") == "mtp" and canonical("qwen3_next_mtp") == "mtp"
    assert canonical("EAGLE3") == "eagle3"
    assert "mtp" not in MTP_ALIASES and not set(MTP_ALIASES) & set(MODELLED)


def test_every_vllm_method_is_modelled_or_refused_in_one_line():
    for name in NOT_MODELLED:
        with pytest.raises(InputError, match=f"--method {name} is not modelled: ") as err:
            canonical(name)
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="unknown --method 'lookahead'"):
        canonical("lookahead")


@pytest.mark.engine
def test_the_names_are_the_installed_vllms():
    """Every name here is one vLLM 0.32 accepts, and every one it accepts is here (vllm/config/speculative.py)."""
    from typing import get_args

    from vllm.config.speculative import MTPModelTypes, SpeculativeMethod

    def flatten(literal):
        out = set()
        for arg in get_args(literal):
            out |= flatten(arg) if get_args(arg) else {arg}
        return out

    accepted = flatten(SpeculativeMethod)
    ours = set(MODELLED) | set(NOT_MODELLED) | set(MTP_ALIASES)
    assert ours == accepted
    assert set(MTP_ALIASES) | {"mtp"} == flatten(MTPModelTypes)
