"""`python -m biascore data download` against a real HTTP server on loopback serving copies of the shared data."""
from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import socket
import threading
from pathlib import Path

import pytest

from biascore.inputs import download
from biascore.cli.main import main

# a CSV with Windows-1252 bytes, a name with "+" (URL quoting), a word list, and a local-only reference file
SAMPLE = ["filipino/crowspairs_tl.csv", "seat/heilman_double_bind_competent_1+3-.jsonl",
          "wordlists/gender_male.txt", "reference/tiny_mlm_summary.csv"]


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror folder; records every request; can cut a response short."""

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        if self.path.lstrip("/") in self.server.truncate:
            body = (Path(self.directory) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])  # then the connection closes
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture()
def mirror(tmp_path, data_dir):
    root = tmp_path / "mirror"
    for rel in SAMPLE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / rel, root / rel)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    server.requests, server.truncate = [], set()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.root = root
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def _run(capsys, *args) -> tuple[int, str, str]:
    rc = main(["data", "download", "--quiet", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_lists_every_shared_file_with_its_checksum(data_dir):
    files = download.load_manifest()
    paths = [f.path for f in files]
    assert len(paths) == len(set(paths))
    shared = {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if p.is_file()} - {"README.md"}
    pins = {p for p in shared if p.endswith("/SOURCE_COMMIT")}  # provenance of a folder: its files' URLs are pinned
    for pin in pins:
        folder, commit = pin.rsplit("/", 1)[0] + "/", (data_dir / pin).read_text().strip()
        urls = [f.url for f in files if f.path.startswith(folder)]
        assert urls and all(f"/{commit}/" in u for u in urls), pin
    assert set(paths) == shared - pins
    for f in files:
        assert _sha(data_dir / f.path) == f.sha256, f.path
        assert (data_dir / f.path).stat().st_size == f.size, f.path
        assert f.licence
        if f.url is None:
            assert f.path.startswith("reference/tiny_mlm_") and "local only" in f.note
        else:
            assert f.url.startswith("https://raw.githubusercontent.com/"), f.url
    assert sum(f.url is None for f in files) == 2


def test_downloads_from_mirror_verified_then_rerun_skips(mirror, tmp_path, capsys, data_dir):
    target = tmp_path / "data"
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", *SAMPLE)
    assert rc == 0, err
    assert "4 downloaded" in out
    for rel in SAMPLE:
        assert (target / rel).read_bytes() == (data_dir / rel).read_bytes()
    assert "/seat/heilman_double_bind_competent_1%2B3-.jsonl" in mirror.requests
    assert not (target / download.PARTIAL_DIR).exists()

    stamps = {rel: (target / rel).stat().st_mtime_ns for rel in SAMPLE}
    mirror.requests.clear()
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", *SAMPLE)
    assert rc == 0 and "4 present" in out
    assert mirror.requests == []  # nothing fetched again
    assert stamps == {rel: (target / rel).stat().st_mtime_ns for rel in SAMPLE}

    rc, out, _ = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", *SAMPLE, "--force")
    assert rc == 0 and "4 downloaded" in out and len(mirror.requests) == 4


def test_mirror_from_environment_and_only_by_benchmark_name(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv(download.MIRROR_ENV, mirror.url)
    target = tmp_path / "data"
    calls = []
    outcomes = download.download_all(target, ["crows-tl"], on_outcome=calls.append)
    assert [o.status for o in outcomes] == ["downloaded"] and calls == outcomes
    assert outcomes[0].path == "filipino/crowspairs_tl.csv"
    assert mirror.requests == ["/filipino/crowspairs_tl.csv"]
    from biascore.inputs.datasets import load_benchmark
    assert len(load_benchmark("crows-tl", target)) == 204


def test_corrupted_file_is_rejected_and_not_installed(mirror, tmp_path, capsys):
    rel = "wordlists/gender_male.txt"
    with open(mirror.root / rel, "ab") as fh:
        fh.write(b"tampered\n")
    target = tmp_path / "data"
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", rel)
    assert rc == 1
    assert "checksum mismatch" in err and f"{mirror.url}/{rel}" in err and "NOT installed" in err
    assert not (target / rel).exists()
    assert not list(target.rglob("*.part"))

    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", rel, "--no-verify")
    assert rc == 0 and "--no-verify" in err
    assert (target / rel).read_bytes().endswith(b"tampered\n")


def test_missing_file_on_server_gives_404_naming_the_url(mirror, tmp_path, capsys):
    target = tmp_path / "data"
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", "seat/weat1.jsonl")
    assert rc == 1
    assert "HTTP 404" in err and f"{mirror.url}/seat/weat1.jsonl" in err
    assert not (target / "seat").exists()


def test_truncated_transfer_is_reported_and_nothing_written(mirror, tmp_path, capsys):
    rel = "filipino/crowspairs_tl.csv"
    mirror.truncate.add(rel)
    target = tmp_path / "data"
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", rel)
    assert rc == 1 and f"{mirror.url}/{rel}" in err
    assert not (target / rel).exists() and not list(target.rglob("*.part"))


def test_unreachable_server_names_the_url(tmp_path, capsys):
    with socket.socket() as s:  # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    rc, out, err = _run(capsys, "--data-dir", str(tmp_path / "d"), "--mirror", url, "--only", "wordlists/gender_male.txt")
    assert rc == 1 and f"cannot reach {url}/wordlists/gender_male.txt" in err


def test_present_file_that_differs_is_left_alone_unless_forced(mirror, tmp_path, capsys, data_dir):
    rel = "wordlists/gender_male.txt"
    target = tmp_path / "data"
    (target / "wordlists").mkdir(parents=True)
    (target / rel).write_text("my own list\n")
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", rel)
    assert rc == 1 and "--force" in err
    assert (target / rel).read_text() == "my own list\n" and mirror.requests == []
    rc, out, err = _run(capsys, "--data-dir", str(target), "--mirror", mirror.url, "--only", rel, "--force")
    assert rc == 0 and (target / rel).read_bytes() == (data_dir / rel).read_bytes()


def test_interrupted_download_leaves_nothing(mirror, tmp_path):
    entry = next(f for f in download.load_manifest() if f.path == "filipino/crowspairs_tl.csv")

    def interrupt(_n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        download.download_file(entry, tmp_path, mirror=mirror.url, on_bytes=interrupt)
    assert not (tmp_path / entry.path).exists() and not list(tmp_path.rglob("*.part"))


def test_local_only_file_needs_a_mirror(tmp_path):
    entry = next(f for f in download.load_manifest() if f.path == "reference/tiny_mlm_scores.csv")
    outcome = download.download_file(entry, tmp_path)
    assert outcome.status == "unavailable" and outcome.ok and "no public source" in outcome.message
    assert not any(tmp_path.iterdir())


def test_only_selection_and_unknown_names(capsys, tmp_path):
    files = download.load_manifest()
    assert [f.path for f in download.select(files, ["wordlists"])] == [
        "wordlists/gender_female.txt", "wordlists/gender_male.txt", "wordlists/gender_stereotype.txt"]
    assert len(download.select(files, ["seat/weat*.jsonl"])) == 15
    assert len(download.select(files, None)) == len(files)
    rc = main(["data", "download", "--data-dir", str(tmp_path), "--only", "nosuch"])
    err = capsys.readouterr().err
    assert rc == 2 and "'nosuch'" in err and "crows_pairs" in err
