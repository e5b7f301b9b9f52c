"""The published numbers the model cannot express, and why (the report lists them)."""

NOT_EXPRESSED = [
    ("§3 gpt-fast Llama-2-70B int4 + 7B int4 draft, 48.4 vs 25.25 tok/s",
     "no acceptance given, and the GPU count is only 'as in that README': the model needs both"),
    ("§3 vLLM blog 2024-10-17 (4×H100, 70B + Qwama-0.5B; n-gram on CNN/DM)",
     "QPS-driven serving ('up to 1.5x', slowdowns 'at high QPS') needs the arrival process and the acceptance; neither "
     "is given. Used qualitatively (speculation loses at high load: the compute-bound regime)"),
    ("§4 MagicDec (8×H100, PG-19, 8B self-speculation / 7B + TinyLlama, batch 32/64)",
     "no acceptance rates in the reference, and self-speculation with a StreamingLLM KV budget is a drafter the model "
     "has no method for; used qualitatively (speedup rising with context at large batch: the regime tests in "
     "tests/model/cost/test_speculative.py)"),
    ("§5 Yan et al. depth vs size (5-layer 796M vs 24-layer 1.3B, 49% lower latency)",
     "GPU, engine and exact architectures not given; printed below as a check (not fitted)"),
    ("§5 vLLM's dynamic-SD schedule example", "a configuration example, not a measurement (compared below)"),
    ("§5 vLLM 0.32's max_num_batched_tokens / max_num_seqs defaults",
     "not a timing: implemented as advisor.vllm.defaults.batch_defaults (tests/vllm/)"),
    ("§6 DeepSeek-V3 on 8×MI300X, ShareGPT columns", "the request lengths are not given (the random 1024/1024 "
     "columns are rows above)"),
    ("§6 DeepSeek-V4-Flash on 4×B200 (vLLM PR #41044)", "no profile of its architecture; its lesson, that the gain "
     "follows AL at a fixed step cost, is the model's structure"),
    ("§6 SGLang PR #3582 and Qwen3.6-27B MTP k sweep (Radeon 8060S)", "acceptance lengths, not timings: AL 1.9 at "
     "k = 1 is the first-position acceptance of the S8 rows, and 1.9/2.4/2.8 at k = 1/2/3 fit "
     "`priors.MTP_REUSE_DECAY`; the iGPU's timings need a profile this project does not have"),
    ("§6 Qwen3-8B + EAGLE-3 trees (gpustack)", "trees of 8-32 draft tokens: vLLM 0.32 drafts chains unless "
     "speculative_token_tree is set; the baseline TPOT is row S10"),
]


