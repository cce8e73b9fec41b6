#!/usr/bin/env bash
# Install Debian's Chromium for the end-to-end browser test (tests/test_e2e_browser.py), once, plus an
# emoji font so the page icons in the screenshots render, and Chinese/Japanese/Korean (Noto CJK) and Thai (TLWG)
# fonts so the Across languages page draws those scripts, not empty boxes (Arabic comes with DejaVu). Playwright's Python client drives the system
# Chromium through executable_path; `playwright install` (a download) is not used.
# Idempotent: installs only what is missing.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
for font in fonts-noto-color-emoji fonts-noto-cjk fonts-thai-tlwg; do
    dpkg -s "$font" >/dev/null 2>&1 || missing+=("$font")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}"
fi
/usr/bin/chromium --version 2>/dev/null | grep -v '^\[' || true
