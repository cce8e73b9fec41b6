#!/usr/bin/env bash
# Install Debian's Chromium for the end-to-end browser test (tests/test_e2e_browser.py), once, plus an
# emoji font so the page icons in the screenshots render. Playwright's Python client drives the system
# Chromium through executable_path; `playwright install` (a download) is not used.
# Idempotent: installs only what is missing.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || missing+=(fonts-noto-color-emoji)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}"
fi
/usr/bin/chromium --version 2>/dev/null | grep -v '^\[' || true
