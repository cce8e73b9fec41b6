"""The CLI lets idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``, as app.py does), set before torch loads
OpenMP, unless the environment says otherwise: torch's threads on every core no longer spin on a core another
process wants (docs/performance.md, "The first minute")."""
from __future__ import annotations

import os
import sys

import pytest

#: prints the policy at the moment torch is first imported, then imports the CLI as the ``biascore`` command does
AT_TORCH_IMPORT = """
import os, sys

class Seen:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            print(os.environ.get("OMP_WAIT_POLICY"))

sys.meta_path.insert(0, Seen())
import biascore.cli.main
"""


@pytest.mark.parametrize("given, seen", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_cli_lets_idle_openmp_threads_sleep_unless_the_environment_says(processes, given, seen):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    out = processes.run([sys.executable, "-c", AT_TORCH_IMPORT], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == seen
