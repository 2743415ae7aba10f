# Debian's Chromium for the console's browser tests (tests/http/test_console.py), installed when missing:
# Playwright drives it (executable_path=/usr/bin/chromium), since Playwright's own browser download does not
# work on these machines. Needs root and apt-get; elsewhere it says what to run.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Debian's chromium for the browser tests" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "tests/http/test_console.py needs Debian's chromium: sudo apt-get install chromium" >&2
fi
