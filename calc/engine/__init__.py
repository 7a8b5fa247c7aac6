"""The engine's rules: a model's config, its weights, the KV cache's layout and the start's terms
(the pool, the gate, the fraction check, ranks, LoRA, offload), each rule citing vLLM's source."""
