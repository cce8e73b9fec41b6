"""Semantic fields on a data directory without the USAS lexicon (a bare clone): one line saying why it is not
shipped and a download button (not in public mode) that fetches it with a progress bar, checks its SHA-256 and
shows its licence; a file whose checksum differs is not installed."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
FIXTURE_DATA = REPO / "tests" / "fixtures" / "data"


def open_fields(monkeypatch, data: Path, **env) -> AppTest:
    monkeypatch.setenv("BIASCORE_DATA_DIR", str(data))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("views/pages/semantic_fields.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _line(at: AppTest) -> str:
    return next(i.value for i in at.info if "USAS lexicon" in i.value)


def test_the_page_says_why_in_one_line_and_offers_the_download(monkeypatch, tmp_path):
    at = open_fields(monkeypatch, tmp_path)
    line = _line(at)
    assert "not shipped" in line and "CC BY-NC-SA 4.0" in line and "\n" not in line
    assert at.button(key="sf_download").label.startswith("Download the USAS lexicon (4 files")
    assert not at.error and not at.dataframe


def test_public_mode_offers_no_download(monkeypatch, tmp_path):
    at = open_fields(monkeypatch, tmp_path, BIASCORE_PUBLIC="1")
    assert "not shipped" in _line(at)
    assert not [b for b in at.button if b.key == "sf_download"]
    assert any("operator" in c.value for c in at.caption)


def test_a_file_whose_checksum_differs_is_not_installed(monkeypatch, tmp_path):
    """The project's own test lexicon (tests/fixtures) served as the mirror: not the published bytes."""
    data = tmp_path / "data"
    at = open_fields(monkeypatch, data, BIASCORE_DOWNLOAD_MIRROR=FIXTURE_DATA.as_uri())
    at.button(key="sf_download").click().run()
    assert any("checksum mismatch for usas/semantic_lexicon_en.tsv" in e.value for e in at.error)
    assert not (data / "usas" / "semantic_lexicon_en.tsv").exists()


def test_the_download_installs_the_published_lexicon_and_names_its_licence(monkeypatch, tmp_path, data_dir):
    data = tmp_path / "data"
    at = open_fields(monkeypatch, data, BIASCORE_DOWNLOAD_MIRROR=data_dir.as_uri())
    at.button(key="sf_download").click().run()
    assert not at.error, [e.value for e in at.error]
    done = at.success[0].value
    assert done.startswith("4 files downloaded, SHA-256 verified.") and "CC BY-NC-SA 4.0" in done
    assert (data / "usas" / "semantic_lexicon_en.tsv").is_file()
    at.button(key="sf_after_download").click().run()
    assert not [i for i in at.info if "not shipped" in i.value]  # the page goes on to the fields
