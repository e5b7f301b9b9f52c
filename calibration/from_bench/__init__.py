"""Learning from the runs users already have: `vllm bench serve` / `vllm bench latency` result files as calibration
(`specadvisor calibrate --from-bench`) and as a check of the advisor's prediction (`specadvisor check`)."""
