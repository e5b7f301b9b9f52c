"""specadvisor: should I turn on speculative decoding in vLLM, with which k, and what will I gain?

The math lives in pure modules over numpy arrays (`costmodel`, `speculative`, `acceptance`, `memory`);
`advise` puts a scenario through them; `report` and `cli` are the edges.
"""

__version__ = "0.1.0"
