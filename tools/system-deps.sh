#!/usr/bin/env bash
# Debian packages the test suite uses: chromium (HTML report screenshots, the dashboard tests), prometheus +
# promtool (telemetry tests against a real server) and postgresql (the service tests start their own server
# with initdb + pg_ctl from /usr/lib/postgresql/*/bin). Idempotent: installs only what is missing, only as root with apt-get, and never
# fails the build; the tests that need a binary skip with a clear reason where it cannot be installed.
set -u
want=()
command -v chromium >/dev/null 2>&1 || want+=(chromium)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || want+=(prometheus)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null 2>&1 || want+=(postgresql)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: missing ${want[*]} and cannot install (not root or no apt-get); those tests will skip"
  exit 0
fi
echo "system-deps: installing ${want[*]}"
log=/tmp/gpufleet-system-deps.log
if ! { timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
      --no-install-recommends "${want[@]}"; } >"$log" 2>&1; then
  echo "system-deps: could not install ${want[*]} (see $log); those tests will skip"
fi
# The Debian packages start prometheus (:9090) and postgresql (:5432) services on some systems; the tests start
# their own on free ports.
exit 0
