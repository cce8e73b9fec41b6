#!/usr/bin/env bash
# Install Debian's Chromium for the end-to-end browser test (tests/test_e2e_browser.py), once.
# Playwright's Python client drives it through executable_path; `playwright install` is not used.
# Idempotent: does nothing when /usr/bin/chromium is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    echo "chromium present: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium
/usr/bin/chromium --version
