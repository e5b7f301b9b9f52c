from dataclasses import replace

import pytest

from advisor.errors import InputError
from advisor.model.cost.drafters import check_mtp, mtp_head


def test_mtp_head_is_the_targets_mtp_layer_sharing_embedding_and_lm_head(llama8b):
    target = replace(llama8b, mtp_layers=1)
    head = mtp_head(target)
    assert head.kind == "mtp_head" and head.num_layers == 1 and head.mtp_layers == 0
    assert (head.hidden_size, head.vocab_size, head.num_kv_heads) == (4096, 128256, 8)  # the target's widths
    assert head.embedding_params == 0
    # one layer: 4096 x (4096 + 2 x 1024) + 4096 x 4096 attention + 3 x 4096 x 14336 MLP = 218,103,808; eh_proj
    # 2 x 4096 x 4096 = 33,554,432; no lm_head of its own (the target's is shared)
    assert head.total_params == 218_103_808 + 33_554_432
    # KV: one layer, 2 x 8 heads x 128 x 2 bytes = 4096 bytes per token
    assert head.kv_bytes_per_token() == 4096


def test_mtp_is_refused_without_mtp_layers_and_with_several(llama8b):
    with pytest.raises(InputError, match="has none"):
        check_mtp(llama8b)
    with pytest.raises(InputError, match="not modelled"):
        mtp_head(replace(llama8b, mtp_layers=3))
