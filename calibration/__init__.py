"""Measure what the engine really costs: microbenchmarks through vLLM, and a fit of the advisor's cost model."""
