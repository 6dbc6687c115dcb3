#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright (no browser download).
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  echo "Installing Debian's chromium for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q chromium
fi
