#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright (no browser download).
# (Another apt at work, an unattended upgrade say, is waited for up to 10 minutes: DPkg::Lock::Timeout.)
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  echo "Installing Debian's chromium for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium
fi
