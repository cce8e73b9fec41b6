"""The model: how a user names it, where it runs, how it is loaded (hub, folder, GGUF, split, quantized, served),
and what every method reads from it (batched log-probabilities, the one embedder, a pair's tokens)."""
