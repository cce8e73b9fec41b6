"""How many tokens of the fingerprint's probe the per-request proof needs (issue 42 item 2).

The proof (:meth:`biascore.models.served.model.ServedModel._prove`) sends the first ``PROOF_TOKENS`` ids of the probe
and compares their log-probabilities with the first ones measured at connection: a causal model's log P(token i |
tokens before it) depends on tokens ≤ i only, so a prefix's log-probabilities are the full probe's first ones (to
the server's numerics, ~1e-5). This measures, in-process on SmolLM2-135M (float32, log-softmax in float64), how far
each token of the probe moves under what the proof must catch — other weights (the reference server's
``--perturb`` noise at several scales and seeds; the weights rounded to bfloat16; int8 per-row), positions shifted
by one either way — and, for each prefix length k, the largest move over the first k tokens against
``DRIFT_TOLERANCE``. Writes bench/results/served_proof_length.md.

    python bench/served_proof_length.py
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from biascore.models.loading import load_model  # noqa: E402
from biascore.models.served.fingerprint import DRIFT_TOLERANCE, PROBE, PROOF_TOKENS  # noqa: E402


@torch.inference_mode()
def _logprobs(model, ids: list[int]) -> torch.Tensor:
    """log P(next token | tokens so far) at every position: [len(ids), vocab] in float64."""
    logits = model(torch.tensor([ids])).logits[0].double()
    return torch.log_softmax(logits, dim=-1)


def _read(lp: torch.Tensor, ids: list[int], shift: int = 0) -> list[float]:
    """log P(token i) for i ≥ 1 read at position i - 1 + shift (0: right; 1: llama-cpp-python's; -1: one early)."""
    return [float(lp[min(max(i - 1 + shift, 0), len(ids) - 1), ids[i]]) for i in range(1, len(ids))]


def main() -> None:
    lm = load_model("smollm2-135m", device="cpu", dtype="fp32")
    model, ids = lm.model, list(lm.tokenizer(PROBE, add_special_tokens=True)["input_ids"])
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    base_lp = _logprobs(model, ids)
    base = _read(base_lp, ids)
    rows: dict[str, list[float]] = {"positions shifted by one (llama-cpp-python)": _read(base_lp, ids, 1),
                                    "positions shifted by one, the other way": _read(base_lp, ids, -1)}

    def variant(name: str, change) -> None:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(change(p))
        rows[name] = _read(_logprobs(model, ids), ids)
        model.load_state_dict(saved)

    for scale in (0.02, 0.005, 0.002):
        for seed in (1, 2, 3):
            gen = torch.Generator().manual_seed(seed)
            variant(f"weights + noise {scale} × std (seed {seed})",
                    lambda p: p + torch.randn(p.shape, generator=gen) * scale * p.std().clamp(min=1e-3))
    variant("weights rounded to bfloat16", lambda p: p.to(torch.bfloat16).float())
    variant("linear weights int8 per row",
            lambda p: p if p.dim() != 2 else (p / (s := p.abs().amax(1, keepdim=True) / 127)).round() * s)
    moved = {name: [abs(a - b) for a, b in zip(base, got)] for name, got in rows.items()}
    ks = [k for k in (2, 3, 4, 5, 6, 8, 10, 12, len(ids)) if k <= len(ids)]
    lines = [f"# The per-request proof's length: how far the probe's first k tokens move (SmolLM2-135M, float32)", "",
             f"Probe: {len(ids)} tokens; tolerance {DRIFT_TOLERANCE} nats; the proof sends the first {PROOF_TOKENS}. "
             "Each cell: the largest |Δ log P| (nats) over tokens 1..k-1 against the model as served; caught when "
             f"above {DRIFT_TOLERANCE}. Command: `python bench/served_proof_length.py`.", "",
             "| what changed | " + " | ".join(f"k = {k}" for k in ks) + " |", "|---" * (len(ks) + 1) + "|"]
    for name, d in moved.items():
        lines.append(f"| {name} | " + " | ".join(f"{max(d[:k - 1]):.3g}" for k in ks) + " |")
    lines += ["", "Per token (k = 2 … " + str(len(ids)) + "), |Δ log P| of each token:", ""]
    for name, d in moved.items():
        lines.append(f"- {name}: " + ", ".join(f"{x:.2g}" for x in d))
    out = REPO / "bench" / "results" / "served_proof_length.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
