"""The GGUF conversion's speed-ups (:func:`biascore.models.loading._fast_gguf`) give what gguf and transformers give
without them, on the embedded SmolLM2's file: every metadata field and value, the tensor-name map and the
de-quantised tensors of each type the file holds, bit for bit."""
from __future__ import annotations

import numpy as np

from biascore.models.loading import _fast_gguf, resolve_source


def test_the_fast_conversion_reads_smollm2_as_gguf_and_transformers_do(monkeypatch):
    import gguf
    import gguf.quants
    import transformers.integrations.ggml as ggml
    import transformers.modeling_gguf_pytorch_utils as hf_gguf

    path = resolve_source("smollm2-135m").gguf_path
    with _fast_gguf():
        fast = gguf.GGUFReader(path)
        assert gguf.GGUFReader(path) is fast  # parsed once while a conversion runs
        plain = gguf.GGUFReader.parse(path)  # gguf's own reader, over its memory map
        assert list(fast.fields) == list(plain.fields) and len(fast.tensors) == len(plain.tensors)
        for name, field in plain.fields.items():
            mine = fast.fields[name]
            assert (mine.types, mine.data) == (field.types, field.data), name
            assert [bytes(p) for p in mine.parts] == [bytes(p) for p in field.parts], name
            assert [hf_gguf._gguf_parse_value(mine.parts[i], mine.types) for i in mine.data] == \
                   [ggml._gguf_parse_value(field.parts[i], field.types) for i in field.data], name
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 30) is gguf.get_tensor_name_map(arch, 30)
        assert gguf.get_tensor_name_map(arch, 30).mapping == gguf.get_tensor_name_map.__wrapped__(arch, 30).mapping
        kinds = {t.tensor_type: i for i, t in enumerate(plain.tensors)}  # Q8_0 (the 49k-row embedding), Q4_1, F32
        assert len(kinds) >= 3
        got = {kind: gguf.dequantize(fast.tensors[i].data, kind) for kind, i in kinds.items()}
    monkeypatch.setattr(gguf.quants, "_apply_over_grouped_rows", gguf.quants._apply_over_grouped_rows.grouped)
    for kind, i in kinds.items():
        want = gguf.dequantize(plain.tensors[i].data, kind)
        assert got[kind].dtype == want.dtype and np.array_equal(got[kind], want), kind.name
