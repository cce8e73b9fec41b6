"""``python -m biascore snapshot export|verify|serve``: write an offline snapshot, check one, or serve one."""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from biascore import settings
from biascore.models.args import add_common_args
from biascore.snapshot.export import export_snapshot
from biascore.snapshot.reader import verify


def register_cli(sub) -> None:
    p = sub.add_parser("snapshot", help="offline snapshots for workshops: export cached results, verify a file",
                       description="Write the cached results of every scorer (and the data they refer to) to one "
                                   "zip that `BIASCORE_SNAPSHOT=FILE streamlit run app.py` opens read-only.")
    actions = p.add_subparsers(dest="snapshot_command", required=True)
    e = actions.add_parser("export", help="write a snapshot zip from the result cache")
    e.add_argument("--out", required=True, metavar="FILE", help="the zip file to write (e.g. demo.zip); an existing one is kept "
                                                "unless --force")
    e.add_argument("--force", action="store_true", help="replace --out when it exists")
    e.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                   help="only these models (name as scored, or a local model folder's last path component)")
    e.add_argument("--benchmarks", nargs="+", default=None, metavar="NAME",
                   help="only these benchmarks / SEAT tests / association tests / labdet-<lang>")
    e.add_argument("--name", action="append", default=[], metavar="MODEL=NAME",
                   help="store MODEL (as scored, or a local folder's last path component) as NAME; repeatable. "
                        "Without it a model scored from a local folder is stored under the folder's name: a "
                        "snapshot never holds a local path")
    add_common_args(e)
    e.set_defaults(func=_cmd_export)
    v = actions.add_parser("verify", help="check a snapshot's checksums and engine version")
    v.add_argument("file", help="the snapshot zip to check")
    v.set_defaults(func=_cmd_verify)
    s = actions.add_parser("serve", help="verify a snapshot, then run the dashboard read-only on it (loopback)",
                           description="The same as `BIASCORE_SNAPSHOT=FILE streamlit run app.py --server.address "
                                       "127.0.0.1`, after checking FILE.")
    s.add_argument("file", help="the snapshot zip to serve")
    s.add_argument("--port", type=int, default=8501, metavar="N", help="the port on 127.0.0.1 (default 8501)")
    s.add_argument("--headless", action="store_true", help="do not open a browser window")
    s.set_defaults(func=_cmd_serve)


def _cmd_export(args: argparse.Namespace) -> int:
    names = {}
    for spec in args.name:
        model, sep, name = spec.partition("=")
        if not sep or not model.strip() or not name.strip():
            raise ValueError(f"--name takes MODEL=NAME, not {spec!r}")
        names[model.strip()] = name.strip()
    manifest = export_snapshot(args.out, models=args.models, benchmarks=args.benchmarks, names=names,
                               overwrite=args.force)  # a SnapshotError: one line, exit 2 (biascore.cli.main)
    counts = Counter(entry["scorer"] for entry in manifest["entries"])
    size = sum(m["size"] for m in manifest["members"].values())
    print(f"wrote {args.out}: {len(manifest['entries'])} cached results ("
          + ", ".join(f"{n} {s}" for s, n in counts.items()) + f") of {len(manifest['models'])} model(s), "
          f"{len(manifest['data'])} data file(s), {size / 1e6:.1f} MB before compression")
    print("models are stored by name and weights fingerprint, never by a local path:")
    for name, facts in manifest["models"].items():
        print(f"  {name}: fingerprint {str(facts.get('fingerprint'))[:16]}…, name {facts.get('name', 'as scored')}")
    for reason in manifest["skipped"]:
        print(f"  left out: {reason}", file=sys.stderr)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    manifest = verify(args.file)  # a SnapshotError: one line, exit 2 (biascore.cli.main)
    print(f"ok: {args.file}: {len(manifest['members'])} members verified (SHA-256), engine "
          f"{manifest['engine_version']}, made {manifest.get('created_at', '?')}; models: "
          + (", ".join(manifest["models"]) or "none"))
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    """Verify, then replace this process by ``streamlit run app.py`` bound to 127.0.0.1 with BIASCORE_SNAPSHOT."""
    _cmd_verify(args)
    os.environ["BIASCORE_SNAPSHOT"] = os.path.abspath(args.file)
    argv = [sys.executable, "-m", "streamlit", "run", str(settings.REPO_ROOT / "app.py"), "--server.address",
            "127.0.0.1", "--server.port", str(args.port), "--browser.gatherUsageStats", "false",
            "--server.headless", "true" if args.headless else "false"]
    sys.stdout.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached
