"""A first run whose model must be converted from its GGUF file says so before the wait, in the dashboard's words
(:meth:`biascore.models.handle.ModelHandle.load_line`); a later run does not."""
from __future__ import annotations

import threading
import time

from biascore.cli.main import main
from gated_model import GatedGguf


def test_a_first_run_says_it_converts_the_model_in_the_dashboards_words(hermetic_models, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["score", "--benchmark", "demo", "--limit", "2"]
    with GatedGguf(tmp_path / "gguf", tmp_path / "cache", hermetic_models / "random-mlm") as gguf:
        line = f"Converting {gguf.path} from its GGUF file (first use on this machine only, a few seconds) …"
        codes = []
        run = threading.Thread(target=lambda: codes.append(main([*argv, "--model", str(gguf.path)])))
        run.start()
        said, deadline = "", time.monotonic() + 120
        while line not in said and run.is_alive() and time.monotonic() < deadline:  # said while it waits
            said += capsys.readouterr().err
            time.sleep(0.05)
        gguf.convert()
        run.join(120)
    assert line in said and codes == [0], said
    assert main([*argv, "--model", str(gguf.path), "--limit", "3"]) == 0
    assert "Converting" not in capsys.readouterr().err
