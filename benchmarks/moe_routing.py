"""Experts a step's tokens touch in a tiny MoE test pair, on the tokens it really generates, against random tokens and
against the uniform-routing count the cost model prices (`ModelSpec.experts_touched`, E·(1 − (1 − top_k/E)^N)).

Issue 46 asked whether a speculative step of a sparse target costs more than its calibration says because real
tokens route unlike the grid's random ones. This runs the target in transformers on the CPU (no vLLM engine, no
download): greedy generation from random prompts, then one forward pass over prompts and outputs with the router's
logits, and for a decode step (B sequences, one token each) and a verification (B sequences × q consecutive tokens)
the distinct experts per layer, averaged over the layers and the output positions. Run by hand; docs/validation.md
quotes it:

    python benchmarks/moe_routing.py /tmp/mpair        # make-test-pair --moe
    python benchmarks/moe_routing.py /tmp/wpair        # make-test-pair --family mixtral-wide
"""

from __future__ import annotations

import argparse

import numpy as np

BATCHES = (1, 4, 16)
WIDTHS = (1, 2, 4)  # q: a decode step, and the verifications of k = 1 and k = 3
PROMPT, OUTPUT = 32, 64


def experts_per_step(top: list[np.ndarray], batch: int, q: int) -> float:
    """Mean distinct experts per layer hit by `batch` sequences × `q` consecutive output tokens. `top`: per layer,
    (sequences, positions, top_k) expert ids."""
    counts = [len(np.unique(layer[:batch, t:t + q])) for layer in top
              for t in range(PROMPT, layer.shape[1] - q + 1)]
    return float(np.mean(counts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pair", help="a make-test-pair folder (target/ is read)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch  # only this benchmark needs torch and transformers, and they take seconds to import
    from transformers import AutoConfig, MixtralForCausalLM  # ... (both come with vLLM's test install)

    torch.set_num_threads(2)
    config = AutoConfig.from_pretrained(f"{args.pair}/target")
    model = MixtralForCausalLM.from_pretrained(f"{args.pair}/target", torch_dtype=torch.float32).eval()
    experts, top_k = config.num_local_experts, config.num_experts_per_tok
    rng = np.random.default_rng(args.seed)
    batch = max(BATCHES)
    prompts = torch.tensor(rng.integers(10, config.vocab_size, (batch, PROMPT)))
    with torch.no_grad():
        generated = model.generate(prompts, max_new_tokens=OUTPUT, min_new_tokens=OUTPUT, do_sample=False,
                                   pad_token_id=0)
        random_tokens = torch.tensor(rng.integers(10, config.vocab_size, tuple(generated.shape)))
        routed = {name: [torch.topk(logits.view(batch, tokens.shape[1], experts), top_k, dim=-1).indices.numpy()
                         for logits in model(tokens, output_router_logits=True).router_logits]
                  for name, tokens in (("generated", generated), ("random", random_tokens))}
    print(f"{args.pair}: {experts} experts, top-{top_k}, {config.num_hidden_layers} layers; experts touched per layer")
    print(f"{'step':>12}  {'generated':>9}  {'random':>7}  {'uniform':>7}")
    for b in BATCHES:
        for q in WIDTHS:
            uniform = experts * (1 - (1 - top_k / experts) ** (b * q))
            print(f"{f'B {b} x q {q}':>12}  {experts_per_step(routed['generated'], b, q):9.2f}  "
                  f"{experts_per_step(routed['random'], b, q):7.2f}  {uniform:7.2f}")


if __name__ == "__main__":
    main()
