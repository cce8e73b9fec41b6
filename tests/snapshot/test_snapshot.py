"""Offline snapshots: export from a cache filled by real scorer runs, delete the model folder and the data
directory, then open every page read-only from the snapshot (streamlit AppTest): the same numbers as the
engine gave before; a tampered or newer snapshot is refused with a one-line message; nothing is written into
the unpacked snapshot.

The runs are small on purpose: the tiny MLM on the demo pairs (attribution, PLL, semantic fields,
log-probability bias, CEAT on weat6 with 4 contexts per word), smollm2-135m on the demo pairs (attribution), all-MiniLM-L6-v2 on weat6b (heads), sent-weat6 (SEAT) and a reduced English LABDet
copy (every 8th training sentence, three nationalities, four templates).
"""
from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from biascore import snapshot
from biascore.version import ENGINE_VERSION
from biascore import settings
from biascore.store.cache import CacheKey, ResultCache
from biascore.methods.attribution.ties import verdicts
from biascore.snapshot.export import export_snapshot
from tests.conftest import DATA_DIR, REPO, TINY_MLM, copy_stored
from waits import SAFETY_MS, SAFETY_S, wait_idle
from tests.views.test_dashboard_pages import frame_with, open_page
from tests.methods.labdet.test_labdet import small_labdet_copy

pytestmark = pytest.mark.shared("tiny_mlm", "data")  # the world is scored with the tiny MLM on the real data
SEAT_TEST, ASSOC_TEST, LOGPROB_TEST = "weat6b", "sent-weat6", "en-gender-career"
ENV = ("BIASCORE_DATA_DIR", "BIASCORE_CACHE_DIR", "BIASCORE_SNAPSHOT")


def _small_data_dir(target: Path) -> Path:
    """A data directory of its own (deleted later): links to the shared files, a reduced LABDet copy."""
    target.mkdir(parents=True)
    for sub in ("crows_pairs", "seat", "usas", "wordlists"):
        (target / sub).symlink_to(DATA_DIR / sub, target_is_directory=True)
    return small_labdet_copy(DATA_DIR, target, lang="en", keep=("de", "cn", "it", "mask"))


def _found(result):
    """``result``, read from its copied cache file (not computed again: the copy is under the key the engine asks)."""
    assert result.timings["from_cache"], f"{result.meta['input']} was computed again, not found in the cache"
    return result


@pytest.fixture(scope="module")
def world(tmp_path_factory, minilm, smollm, smollm_demo):
    """Score everything into a private cache with a private copy of the tiny MLM, record the engine's numbers,
    export the snapshot, then delete the model copy and the data directory. (SmolLM2's demo run is the session's,
    :func:`smollm_demo`, its file copied into the private cache: the demo dashboard serves the same run.)"""
    from biascore.runs import runner
    from biascore.models.loading import load_model
    from biascore.methods import get
    from biascore.methods.association.logprob_bias import effect_sizes, load_logprob_test
    from biascore.methods.attribution.scorer import summarize
    from biascore.methods.attribution.token_view import pair_table
    from biascore.methods.fields.scorer import fields_result

    root = tmp_path_factory.mktemp("snapshot_world")
    saved = {k: os.environ.get(k) for k in ENV}
    data, cache, model_dir = root / "data", root / "cache", root / "models" / "tiny-mlm"
    _small_data_dir(data)
    shutil.copytree(TINY_MLM, model_dir)
    cache.mkdir()
    os.environ.update(BIASCORE_DATA_DIR=str(data), BIASCORE_CACHE_DIR=str(cache))
    os.environ.pop("BIASCORE_SNAPSHOT", None)
    torch.set_num_threads(1)
    copy_stored([smollm_demo["result"]], smollm_demo["cache"], cache)
    try:
        tiny = load_model(str(model_dir))
        scores = runner.run(get("attribution"), tiny, "demo").frame
        expected = {
            "tiny": tiny.name, "tiny_shown": model_dir.name, "scores": scores, "tiny_fingerprint": tiny.fingerprint,
            "B_smollm": summarize(_found(runner.run(get("attribution"), smollm, "demo")).frame, "attribution"),
            "B": summarize(scores, "attribution"), "PLL": summarize(scores, "pll"), "pairs": pair_table(scores),
            "fields": fields_result(runner.run(get("fields"), tiny, "demo", min_count=1, top=10)),
            "heads": runner.run(get("heads"), minilm, SEAT_TEST).frame,
            "counter": runner.run(get("heads-counter"), minilm).frame,
            "labdet": runner.run(get("labdet"), minilm, "en"),
            "seat": runner.run(get("seat"), minilm, ASSOC_TEST).frame,
            "logprob": effect_sizes(runner.run(get("logprob"), tiny, LOGPROB_TEST).stored,
                                    load_logprob_test(LOGPROB_TEST)),
            "ceat": runner.run(get("ceat"), tiny, "weat6", segment_lengths=(None,), n_contexts=4, draws=50).frame,
        }
        zip_path = root / "demo.zip"
        manifest = export_snapshot(zip_path)
        shutil.rmtree(model_dir)
        shutil.rmtree(data)
        # a fresh, empty cache of the laptop's own (converted GGUF models shared as in conftest)
        laptop = root / "laptop-cache"
        laptop.mkdir()
        (laptop / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
        os.environ.update(BIASCORE_CACHE_DIR=str(laptop), BIASCORE_DATA_DIR=str(data))
        yield {"zip": zip_path, "manifest": manifest, "root": root, **expected}
    finally:
        snapshot.deactivate()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def served(world, monkeypatch):
    """The dashboard process's environment: BIASCORE_SNAPSHOT set; deactivated afterwards."""
    monkeypatch.setenv("BIASCORE_SNAPSHOT", str(world["zip"]))
    yield world
    snapshot.deactivate()


def texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("info", "warning", "caption", "markdown") for e in at.get(kind))


# --------------------------------------------------------------------------------------------- export
def test_manifest_lists_every_scorer_with_checksums(world):
    manifest = world["manifest"]
    scorers = {e["scorer"] for e in manifest["entries"]}
    assert {"attribution", "attribution.derived", "fields", "heads", "heads-counter", "labdet", "seat", "ceat",
            "logprob", "logprob.derived"} <= scorers
    assert manifest["engine_version"] == ENGINE_VERSION and manifest["packages"]["torch"]
    with zipfile.ZipFile(world["zip"]) as zf:
        names = set(zf.namelist()) - {"manifest.json"}
        assert names == set(manifest["members"])
        import hashlib
        for name in names:
            assert hashlib.sha256(zf.read(name)).hexdigest() == manifest["members"][name]["sha256"]
    data = {d["member"] for d in manifest["data"]}
    assert {"data/demo_pairs.csv", f"data/seat/{SEAT_TEST}.jsonl", f"data/seat/{ASSOC_TEST}.jsonl",
            "data/labdet/train/en.json",
            "data/crows_pairs/crows_pairs_anonymized.csv", "data/wordlists/gender_male.txt"} <= data
    assert manifest["models"][world["tiny_shown"]]["kind"] == "masked"  # stored by its folder's name
    for entry in manifest["entries"]:  # each key is the cache key the engine asks for
        key = CacheKey.make(entry["scorer"], **{k: v for k, v in entry["key"].items()
                                                if k not in ("scorer", "digest", "engine_version")})
        assert key.digest == entry["key"]["digest"] == Path(entry["member"]).stem


def test_cli_export_filters_and_verify(world, tmp_path, capsys):
    from biascore.cli.main import main

    assert main(["snapshot", "verify", str(world["zip"])]) == 0
    assert "members verified" in capsys.readouterr().out
    out = tmp_path / "minilm.zip"
    cache = world["root"] / "cache"
    # the data directory is gone by now: only results that need none of it would export; ask for LABDet
    # (its data went with the directory) and the command says why nothing is left
    assert main(["snapshot", "export", "--out", str(out), "--cache-dir", str(cache), "--models", "all-minilm-l6-v2",
                 "--benchmarks", "en"]) == 2
    assert "nothing to export" in capsys.readouterr().err and not out.exists()


def test_export_selection_by_model_and_benchmark(world, tmp_path):
    """--models / --benchmarks keep only matching results (re-exported from the unpacked snapshot)."""
    opened = snapshot.open_snapshot(world["zip"])
    out = tmp_path / "heads.zip"
    manifest = export_snapshot(out, models=["all-minilm-l6-v2"], benchmarks=[SEAT_TEST],
                               cache=ResultCache(opened.root / "cache"), data_dir=opened.root / "data")
    # the counter-stereotype attentions belong to no benchmark of the selection: they follow the model
    assert {e["scorer"] for e in manifest["entries"]} == {"heads", "heads-counter"}
    assert list(manifest["models"]) == ["all-minilm-l6-v2"]
    tiny_name = Path(world["tiny"]).name  # a local folder is also matched by its last path component
    manifest = export_snapshot(tmp_path / "tiny.zip", models=[tiny_name], benchmarks=["demo"],
                               cache=ResultCache(opened.root / "cache"), data_dir=opened.root / "data")
    assert {e["scorer"] for e in manifest["entries"]} == {"attribution", "attribution.derived", "fields"}
    snapshot.verify(tmp_path / "tiny.zip")


def test_export_refuses_an_existing_zip_and_an_unknown_benchmark(world, tmp_path, capsys):
    """An existing --out is kept unless --force; a --benchmarks name no cached result has is one line, exit 2."""
    from biascore.cli.main import main

    opened = snapshot.open_snapshot(world["zip"])
    out = tmp_path / "taken.zip"
    out.write_bytes(b"someone's earlier snapshot")
    args = ["snapshot", "export", "--out", str(out), "--cache-dir", str(opened.root / "cache"), "--data-dir",
            str(opened.root / "data"), "--models", world["tiny_shown"], "--benchmarks", "demo"]
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "already exists" in err[0] and "--force" in err[0]
    assert out.read_bytes() == b"someone's earlier snapshot"
    assert main([*args, "--force"]) == 0
    snapshot.verify(out)
    capsys.readouterr()
    assert main([*args, "no-such-benchmark", "--force"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "no cached result on no-such-benchmark" in err[0] and "demo" in err[0]
    # the documented labdet-<lang> form names LABDet's input
    manifest = export_snapshot(tmp_path / "labdet.zip", models=["all-minilm-l6-v2"], benchmarks=["labdet-en"],
                               cache=ResultCache(opened.root / "cache"), data_dir=opened.root / "data")
    assert "labdet" in {e["scorer"] for e in manifest["entries"]}


def _stored_text(zip_path: Path) -> str:
    """Everything a snapshot stores, as text: the manifest, each result's metadata and cells, each data file."""
    import io

    import pyarrow.parquet as pq

    parts = []
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            raw = zf.read(name)
            if name.endswith(".parquet"):
                table = pq.read_table(io.BytesIO(raw))
                parts += [repr(table.schema.metadata), table.to_pandas().to_csv()]
            else:
                parts.append(raw.decode("utf-8", errors="replace"))
    return "\n".join(parts)


def test_snapshot_stores_display_names_and_no_local_path(world):
    """The model scored from a folder is stored by the folder's name and its fingerprint; nothing in the zip
    names a folder of the exporting machine (the world's temporary folders, the project, the shared data and
    model folders, the temporary directory)."""
    import tempfile

    facts = world["manifest"]["models"][world["tiny_shown"]]
    assert facts["fingerprint"] == world["tiny_fingerprint"] and "folder" in facts["name"]
    assert world["tiny"] not in world["manifest"]["models"]
    text = _stored_text(world["zip"])
    for path in (str(world["root"]), str(REPO), str(TINY_MLM), str(TINY_MLM.parent), str(DATA_DIR),
                 tempfile.gettempdir().rstrip("/") + "/"):
        assert path not in text, f"the snapshot stores {path}"


def test_export_under_a_given_name_and_refused_clash(world, tmp_path, capsys, monkeypatch):
    """`snapshot export --name MODEL=NAME` stores the model (and every result that refers to its results) under
    NAME, says what it stores, and the dashboard shows the same numbers under NAME; two models with different
    weights cannot share a name."""
    from biascore.cli.main import main

    opened = snapshot.open_snapshot(world["zip"])
    out = tmp_path / "named.zip"
    args = ["snapshot", "export", "--out", str(out), "--cache-dir", str(opened.root / "cache"), "--data-dir",
            str(opened.root / "data"), "--models", world["tiny_shown"], "--benchmarks", "demo"]
    assert main([*args, "--name", f"{world['tiny_shown']}=workshop-model"]) == 0
    said = capsys.readouterr().out
    assert "never by a local path" in said and "workshop-model: fingerprint" in said and "given at export" in said
    manifest = snapshot.verify(out)
    assert list(manifest["models"]) == ["workshop-model"]
    assert {e["key"]["model"] for e in manifest["entries"] if "model" in e["key"]} == {"workshop-model"}
    monkeypatch.setenv("BIASCORE_SNAPSHOT", str(out))  # the dashboard serves the new snapshot
    try:
        at = open_page("token_attributions", model="workshop-model", benchmark="demo")
        shown = frame_with(at, "sjsd").sort_values("pair_id").reset_index(drop=True)
        expected = world["pairs"].sort_values("pair_id").reset_index(drop=True)
        np.testing.assert_allclose(shown.sjsd.to_numpy(float), expected.sjsd.to_numpy(float), rtol=1e-9)
    finally:
        monkeypatch.delenv("BIASCORE_SNAPSHOT")
        snapshot.deactivate()
    # (--force: the zip written above exists, and these refusals are about the names)
    assert main([*args[:-4], "--name", f"{world['tiny_shown']}=m", "--name", "smollm2-135m=m", "--force"]) == 2
    assert "would both be stored as 'm'" in capsys.readouterr().err
    assert main([*args, "--name", "no-such-model=x", "--force"]) == 2
    assert "already exists" not in capsys.readouterr().err


# --------------------------------------------------------------------------------------------- refusal
def _rewrite(src: Path, dst: Path, change) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, change(info.filename, zin.read(info.filename)))
    return dst


def test_tampered_snapshot_is_refused_in_one_line(world, tmp_path, monkeypatch, capsys):
    from biascore.cli.main import main

    def flip(name, raw):
        return raw.replace(b"Women", b"WOMEN") if name == "data/demo_pairs.csv" else raw  # same size

    bad = _rewrite(world["zip"], tmp_path / "tampered.zip", flip)
    with pytest.raises(snapshot.SnapshotError) as err:
        snapshot.verify(bad)
    assert "checksum of data/demo_pairs.csv does not match" in str(err.value) and "\n" not in str(err.value)
    assert main(["snapshot", "verify", str(bad)]) == 2
    assert main(["snapshot", "serve", str(bad)]) == 2  # refused before any server starts
    assert capsys.readouterr().err.count("\n") == 2  # one line per command
    leftovers = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("biascore-snapshot-*"))
    with pytest.raises(snapshot.SnapshotError):
        snapshot.open_snapshot(bad)
    assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("biascore-snapshot-*")) == leftovers  # nothing left
    monkeypatch.setenv("BIASCORE_SNAPSHOT", str(bad))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=SAFETY_S).run()
    assert not at.exception
    assert len(at.error) == 1 and "Snapshot refused" in at.error[0].value and "\n" not in at.error[0].value
    assert settings.snapshot_root() is None


def test_newer_engine_snapshot_names_the_version(world, tmp_path, monkeypatch):
    def newer(name, raw):
        if name != "manifest.json":
            return raw
        manifest = json.loads(raw)
        manifest["engine_version"] = "9.1.0"
        return json.dumps(manifest).encode()

    bad = _rewrite(world["zip"], tmp_path / "newer.zip", newer)
    with pytest.raises(snapshot.SnapshotError, match=r"engine 9\.1\.0; this is engine .*install biascore 9\.1\.0"):
        snapshot.verify(bad)
    monkeypatch.setenv("BIASCORE_SNAPSHOT", str(bad))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=SAFETY_S).run()
    assert len(at.error) == 1 and "9.1.0" in at.error[0].value


def test_older_engine_snapshot_is_refused_with_the_way_out(world, tmp_path):
    def older(name, raw):
        if name != "manifest.json":
            return raw
        return json.dumps({**json.loads(raw), "engine_version": "0.9.0"}).encode()

    with pytest.raises(snapshot.SnapshotError, match=rf"older biascore engine 0\.9\.0.*export it again with engine "
                                                     rf"{ENGINE_VERSION}"):
        snapshot.verify(_rewrite(world["zip"], tmp_path / "older.zip", older))


def test_threads_open_one_snapshot_once(world):
    """Streamlit serves sessions on threads: concurrent first opens unpack the file once and agree."""
    from concurrent.futures import ThreadPoolExecutor

    from biascore.snapshot import reader

    reader._opened.clear()
    with ThreadPoolExecutor(8) as pool:
        opened = list(pool.map(lambda _: snapshot.open_snapshot(world["zip"]), range(8)))
    assert len({o.root for o in opened}) == 1 and len(reader._opened) == 1


def test_unlisted_member_and_unsafe_names_are_refused(world, tmp_path):
    extra = tmp_path / "extra.zip"
    shutil.copy(world["zip"], extra)
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("cache/heads/extra.parquet", b"x")
    with pytest.raises(snapshot.SnapshotError, match="not listed"):
        snapshot.verify(extra)

    def escape(name, raw):
        if name != "manifest.json":
            return raw
        manifest = json.loads(raw)
        manifest["members"]["../evil"] = {"sha256": "0", "size": 1}
        return json.dumps(manifest).encode()

    with pytest.raises(snapshot.SnapshotError, match="outside"):
        snapshot.verify(_rewrite(world["zip"], tmp_path / "evil.zip", escape))

    def grown(name, raw):  # a member larger than its listed size (same bytes at the start)
        return raw + b"x" * 4096 if name == "data/demo_pairs.csv" else raw

    with pytest.raises(snapshot.SnapshotError, match="not the size"):
        snapshot.verify(_rewrite(world["zip"], tmp_path / "grown.zip", grown))


# --------------------------------------------------------------------------------------------- pages
def test_overview_same_numbers_and_no_scoring(served):
    at = open_page("overview")
    long = frame_with(at, "B_ci_low")
    shown = long[long.model == served["tiny_shown"]].reset_index(drop=True)
    assert list(shown.bias_type) == list(served["B"].bias_type)
    assert shown.B.tolist() == pytest.approx(served["B"].score.tolist())
    assert shown.B_ci_low.tolist() == pytest.approx(served["B"].ci_low.tolist())
    assert shown.PLL.tolist() == pytest.approx(served["PLL"].score.tolist())
    shown = long[long.model == "smollm2-135m"]
    assert shown.B.tolist() == pytest.approx(served["B_smollm"].score.tolist())
    assert not [b for b in at.button if "Score now" in b.label]
    assert "read-only snapshot" in texts(at).lower()
    assert any("demo.zip" in c.value for c in at.sidebar.caption)


def test_token_attributions_same_numbers(served):
    at = open_page("token_attributions", model=served["tiny_shown"], benchmark="demo")
    shown = frame_with(at, "sjsd").sort_values("pair_id").reset_index(drop=True)
    expected = served["pairs"].sort_values("pair_id").reset_index(drop=True)
    np.testing.assert_allclose(shown.sjsd.to_numpy(float), expected.sjsd.to_numpy(float), rtol=1e-9)
    assert list(shown.verdict) == list(verdicts(expected, "attribution"))


def test_words_view_opens_on_the_snapshot(served):
    at = open_page("words", model=served["tiny_shown"], benchmark="demo")
    assert not at.error and len(at.dataframe) >= 1
    assert not [b for b in at.button if "Score now" in b.label]


def test_semantic_fields_same_table(served):
    at = open_page("semantic_fields", model=served["tiny_shown"], benchmark="demo")
    at.slider(key="sf_min_count").set_value(1).run()
    assert not at.exception
    table = at.dataframe[0].value
    pd.testing.assert_frame_equal(table.reset_index(drop=True), served["fields"].table, check_dtype=False)


def test_attention_heads_same_scores_and_model_parts_off(served):
    at = open_page("attention_heads", model="all-minilm-l6-v2", seat=SEAT_TEST)
    from biascore.methods.heads import counter_stereotype as cs
    from biascore.methods.heads import scorer as heads

    assert at.selectbox(key="model_select").options == ["all-minilm-l6-v2"]  # the models with head scores
    top = heads.top_heads(served["heads"], 10)
    shown = frame_with(at, "name")
    assert list(shown["name"]) == list(top["name"])
    np.testing.assert_allclose(shown["score"], top["score"], rtol=1e-12)
    counter = cs.counter_stereotype_test(cs.d_array(served["counter"]), heads.scores_to_matrix(served["heads"]))
    shown = frame_with(at, "group")  # the counter-stereotype test from the cached attentions
    np.testing.assert_allclose(shown["t"], counter["t"], rtol=1e-12)
    assert list(shown["N"]) == list(counter["N"])
    assert "attention views of one counter pair run the model" in texts(at)  # live attentions: off
    at.checkbox(key="run_mask").check().run()  # no masking table cached: said so, nothing computed
    assert not at.exception and "not in the snapshot" in texts(at)


def test_nationality_same_table(served):
    from biascore.methods.labdet import scorer as labdet

    at = open_page("nationality", model="all-minilm-l6-v2")
    pd.testing.assert_frame_equal(at.dataframe[0].value[labdet.OUTPUT_COLUMNS].reset_index(drop=True),
                                  served["labdet"].table[labdet.OUTPUT_COLUMNS])
    # a language not in the snapshot: said so, no button
    at.selectbox(key="lang").set_value("de").run()
    assert not at.exception and not at.error and not [b for b in at.button if b.label == "Score now"]
    assert "off in this read-only snapshot" in texts(at)


def test_association_same_numbers(served):
    at = open_page("association_tests", model="all-minilm-l6-v2")
    at.multiselect(key="seat_tests").set_value([ASSOC_TEST]).run()
    seat = frame_with(at, "effect_size")
    assert seat.effect_size.tolist() == pytest.approx(served["seat"].effect_size.tolist(), rel=1e-12)
    assert seat.p_value.tolist() == pytest.approx(served["seat"].p_value.tolist())
    assert not [b for b in at.button if b.label == "Score now"]
    at.selectbox(key="model_select").set_value(served["tiny_shown"]).run()
    at.multiselect(key="logprob_tests").set_value([LOGPROB_TEST]).run()
    assert not at.exception
    shown = next(df.value for df in at.dataframe if "structure" in df.value.columns)
    assert shown.effect_size.tolist() == pytest.approx(served["logprob"].effect_size.tolist(), rel=1e-12)
    # CEAT on the default corpus (the CrowS-Pairs sentences, shipped in the snapshot)
    at.multiselect(key="ceat_tests").set_value(["weat6"])
    at.multiselect(key="ceat_lengths").set_value(["all"])
    at.number_input(key="ceat_n").set_value(4)
    at.number_input(key="ceat_draws").set_value(50).run()
    assert not at.exception
    shown = next(df.value for df in at.dataframe if "segment_length" in df.value.columns)
    assert shown.effect_size.tolist() == pytest.approx(served["ceat"].effect_size.tolist(), rel=1e-12)
    assert shown.p_value.tolist() == pytest.approx(served["ceat"].p_value.tolist(), rel=1e-12)


def test_try_pair_says_which_model_runs(served, monkeypatch):
    at = open_page("try_pair")
    assert "embedded default model smollm2-135m" in texts(at)
    from biascore import api  # the public API the page asks

    monkeypatch.setattr(api, "list_embedded", lambda: [{"alias": "smollm2-135m", "installed": False}])
    at = open_page("try_pair")
    assert any("not installed" in w.value for w in at.warning)


def test_translation_review_opens(served):
    open_page("translation_review", benchmark="demo")


def test_nothing_is_written_into_the_snapshot(served):
    opened = snapshot.activate(served["zip"])
    before = sorted((str(p), p.stat().st_mtime_ns) for p in opened.root.rglob("*"))
    for page in ("overview", "semantic_fields", "nationality"):
        open_page(page, model=served["tiny_shown"] if page != "nationality" else "all-minilm-l6-v2", benchmark="demo")
    assert sorted((str(p), p.stat().st_mtime_ns) for p in opened.root.rglob("*")) == before
    cache = ResultCache()
    assert cache.read_only and cache.root == opened.root / "cache"
    with pytest.raises(settings.ReadOnlySnapshotError):
        cache.save(CacheKey.make("heads", model="x"), pd.DataFrame({"a": [1]}))
    modes = [p.stat().st_mode for p in [opened.root, *opened.root.rglob("*")]]
    assert all(mode & 0o222 == 0 for mode in modes)  # read-only files and folders (even for root)


# --------------------------------------------------------------------------------------------- real browser
def test_real_browser_on_the_snapshot(world, tmp_path, browser):
    """`streamlit run app.py` with BIASCORE_SNAPSHOT on loopback, driven by Debian's Chromium: pages open
    without errors with no model folder and no data directory; README screenshots are taken here."""
    import sys

    from tests.dashboard_server import dashboard
    from tests.views.test_e2e_browser import SCREENSHOTS, assert_no_errors

    def serve(port: int) -> list[str]:  # `snapshot serve` checks the file, then becomes streamlit on 127.0.0.1
        return [sys.executable, "-m", "biascore", "snapshot", "serve", str(world["zip"]), "--port", str(port),
                "--headless"]

    assert not Path(os.environ["BIASCORE_DATA_DIR"]).exists()
    with dashboard(tmp_path / "streamlit.log", command=serve, BIASCORE_REVIEW_DB=str(tmp_path / "r.sqlite")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1500})
        page.set_default_timeout(SAFETY_MS)
        shots = {"": "", "attention_heads?model=all-minilm-l6-v2&seat=weat6b": "snapshot_heads",
                 "nationality?model=all-minilm-l6-v2": "", "association_tests?model=all-minilm-l6-v2": "",
                 f"token_attributions?benchmark=demo&model={world['tiny']}": "", "semantic_fields": ""}
        for path, shot in shots.items():
            page.goto(f"{url}/{path}", wait_until="domcontentloaded")
            page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
            wait_idle(page)
            assert_no_errors(page, path)
            assert "Read-only snapshot" in page.locator('[data-testid="stSidebar"]').inner_text()
            assert page.get_by_role("button", name="Score now").count() == 0, path
            if path == "":  # the Overview
                page.locator(".js-plotly-plot").first.wait_for(timeout=SAFETY_MS)
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / "snapshot_overview.png"))
            if shot:
                page.locator(".js-plotly-plot").first.wait_for(timeout=SAFETY_MS)
                page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
        # Try a pair: the embedded default model scores live (installed here)
        page.goto(f"{url}/try_pair", wait_until="domcontentloaded")
        wait_idle(page)
        assert page.get_by_text("embedded default model smollm2-135m", exact=False).count() >= 1
        page.get_by_label("More-biased sentence").fill("Women are bad at math.")
        page.get_by_label("Less-biased sentence").fill("Men are bad at math.")
        page.get_by_label("Less-biased sentence").press("Enter")
        wait_idle(page, rerun=True)
        assert_no_errors(page, "try_pair (scored)")
        assert page.get_by_text("Verdict:").count() == 1
        page.close()


# --------------------------------------------------------------------------------------------- a bare clone's snapshot
#: the demo-aligned languages the bare snapshot stores; its Across languages page scores the rest live, in memory
ALIGNED_STORED = ["de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]


@pytest.fixture(scope="module")
def bare(world, tmp_path_factory, minilm, smollm, demo_aligned_scores):
    """The workshop path of a bare clone (issue 41): no data directory, so every input is a shipped one; then
    words, heads on demo-weat6 (no counter-stereotype result), LABDet on demo and SEAT on demo-weat6 beside the
    world's scores of the demo pairs and the demo-aligned set in all its languages but Arabic (the session's scores,
    :func:`demo_aligned_scores`, their stored files copied into this cache), and ``snapshot export`` from that cache
    with that (empty) data folder."""
    from biascore.methods import get
    from biascore.runs import runner

    root = tmp_path_factory.mktemp("bare_world")
    empty, cache = root / "no-data", ResultCache(world["root"] / "cache")
    empty.mkdir()
    copy_stored([demo_aligned_scores["scores"].results[lang] for lang in ALIGNED_STORED],
                demo_aligned_scores["cache"], cache.root)
    with settings.directories(str(empty), str(cache.root)):
        runner.run(get("words"), smollm, "demo")
        runner.run(get("heads"), minilm, "demo-weat6")
        runner.run(get("labdet"), minilm, "demo")
        runner.run(get("seat"), minilm, "demo-weat6")
        for lang in ALIGNED_STORED:
            _found(runner.run(get("attribution"), smollm, f"demo-aligned-{lang}"))
    manifest = export_snapshot(root / "bare.zip", cache=cache, data_dir=empty)
    return {"zip": root / "bare.zip", "manifest": manifest, "root": root}


def test_a_snapshot_carries_the_shipped_files(bare):
    """Every shipped file is in the snapshot (the pages read the gender word lists even with no counter-stereotype
    result in it), and no counter-stereotype result is: the heads page must key one from the word lists. (No
    semantic fields either: the page says so in one line, tested in the browser below.)"""
    from biascore.inputs.shipped import shipped_files

    members = {d["member"] for d in bare["manifest"]["data"]}
    assert {f"data/{f.path}" for f in shipped_files()} <= members
    assert "heads-counter" not in {e["scorer"] for e in bare["manifest"]["entries"]}
    assert {"heads", "labdet", "seat", "words"} <= {e["scorer"] for e in bare["manifest"]["entries"]}
    aligned = {e["key"]["input"] for e in bare["manifest"]["entries"] if e["scorer"] == "attribution"} - {"demo"}
    assert aligned == {f"demo-aligned-{lang}" for lang in ALIGNED_STORED}  # Arabic is scored by the page


def test_every_page_of_a_bare_snapshot_in_a_real_browser(bare, tmp_path, browser):
    """``BIASCORE_SNAPSHOT=bare.zip streamlit run app.py`` with no data directory: every page of the menu shows its
    stored result, or says in one line what the snapshot does not hold (Across languages: the stored languages,
    and Arabic scored live in memory, as a read-only snapshot stores nothing); no page names the unpacked folder;
    no traceback in the server's log."""
    from tests.dashboard_server import dashboard
    from tests.views.test_e2e_bare_clone import RESULT
    from tests.views.test_e2e_browser import assert_no_errors
    from views.menu import menu_pages

    log = tmp_path / "streamlit.log"
    pages = {p.url_path: "" for p in menu_pages()}
    pages.update(attention_heads="?model=all-minilm-l6-v2&seat=demo-weat6", nationality="?model=all-minilm-l6-v2&lang=demo",
                 association_tests="?model=all-minilm-l6-v2", words="?model=smollm2-135m&benchmark=demo")
    holds_no = {"semantic_fields": "has no semantic fields in this snapshot"}
    with dashboard(log, BIASCORE_SNAPSHOT=str(bare["zip"]), BIASCORE_DATA_DIR=str(tmp_path / "no-data-here"),
                   BIASCORE_REVIEW_DB=str(tmp_path / "r.sqlite")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        page.set_default_timeout(SAFETY_MS)
        for name, query in pages.items():
            page.goto(f"{url}/{'' if name == 'overview' else name}{query}", wait_until="domcontentloaded")
            page.locator("h1").first.wait_for()
            wait_idle(page)
            assert_no_errors(page, name)
            text = page.locator('[data-testid="stMain"]').inner_text()
            assert "biascore-snapshot-" not in text and str(bare["root"]) not in text, name
            if name in holds_no:
                assert holds_no[name] in text, text[:1500]
            else:
                assert page.locator(RESULT).count() > 0, f"{name}: no stored result shown: {text[:1500]}"
            if name == "attention_heads":  # the parts the snapshot has no result for say so, each in one line
                assert "Targeted head masking" in text and "not in the snapshot" in text, text[-3000:]
        page.close()
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
