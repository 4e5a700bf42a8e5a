#!/bin/sh
# The Debian packages: build them with CPack, install them with dpkg -i, run a
# Trial, then disable a Harness by removing its package. Changes the system's
# packages, so it runs only as root with TRIALBOX_TEST_DEB=1 (scripts/test
# sets it), and removes every trialbox package it installed at the end.
#   deb-test.sh SOURCE_DIR
set -eu
if [ "$(id -u)" != 0 ] || [ "${TRIALBOX_TEST_DEB:-0}" != 1 ] || ! command -v dpkg >/dev/null; then
        echo "deb-test: skipped (needs root, dpkg and TRIALBOX_TEST_DEB=1)"
        exit 77
fi
if dpkg-query -W -f='${Status}' trialbox 2>/dev/null | grep -q "install ok installed"; then
        echo "deb-test: skipped: a trialbox package is installed already; remove it first"
        exit 77
fi
src=$(cd "$1" && pwd)
w=$(mktemp -d /tmp/trialbox-deb.XXXXXX)
chmod 755 "$w"
installed=""
cleanup() {
        [ -z "$installed" ] || dpkg --purge $installed >/dev/null 2>&1 || true
        rm -rf "$w"
}
trap cleanup EXIT
fail() { echo "deb-test: $*" >&2; exit 1; }

cmake -S "$src" -B "$w/build" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=Release -DTRIALBOX_TESTS=OFF \
        -DTRIALBOX_STATIC_DEPS=OFF >/dev/null
cmake --build "$w/build" -j"$(nproc)" >/dev/null
(cd "$w/build" && cpack -G DEB >/dev/null 2>&1) || fail "cpack failed"
echo "== packages"
for deb in "$w"/build/*.deb; do
        printf '%-44s %8s bytes\n' "$(basename "$deb")" "$(stat -c %s "$deb")"
done
installed=$(for deb in "$w"/build/*.deb; do dpkg-deb -f "$deb" Package; done | tr '\n' ' ')
for p in trialbox trialbox-dev trialbox-plugin-shell trialbox-plugin-codex trialbox-plugin-claude trialbox-plugin-muse \
        trialbox-plugin-agy trialbox-plugin-grok trialbox-plugin-opencode trialbox-plugin-gemini; do
        echo " $installed " | grep -q " $p " || fail "no package $p"
done
dpkg -i "$w"/build/*.deb >/dev/null
# Packages link json-c, libffi and libseccomp shared (TRIALBOX_STATIC_DEPS=OFF),
# so that a security update of one reaches the installed trialbox.
for lib in libjson-c libffi libseccomp; do
        ldd /usr/bin/trialbox | grep -q "$lib" || fail "the packaged trialbox does not load $lib shared"
done

echo "== installed: a Trial with no environment set up"
clean="env -i PATH=/usr/bin:/bin HOME=$w"
$clean trialbox harnesses | grep -q '^grok ' || fail "harnesses does not list grok"
mkdir "$w/repo"
# Started as root, the session runs as the repository's owner (here nobody).
chmod 755 "$w"
chown nobody "$w/repo"
$clean trialbox run -q --harness shell --repo "$w/repo" --output-dir "$w/out" -- -c 'echo ran; id -u' >"$w/ran" ||
        fail "the Trial did not run: $(cat "$w/ran")"
[ "$(cat "$w/ran")" = "ran
$(id -u nobody)" ] || fail "the Trial printed: $(cat "$w/ran")"
grep -q '"outcome":"completed"' "$w/out/outcome.json" || fail "outcome: $(cat "$w/out/outcome.json")"
[ -f /usr/share/man/man1/trialbox.1 ] && [ -f /usr/share/bash-completion/completions/trialbox ] ||
        fail "the man page or the completion is missing"

echo "== disable grok: remove its package"
dpkg -r trialbox-plugin-grok >/dev/null
installed=$(echo "$installed" | sed 's/trialbox-plugin-grok//')
if $clean trialbox harnesses | grep -q '^grok '; then fail "grok is still listed"; fi
status=0
msg=$($clean trialbox run --harness grok --repo "$w/repo" --output-dir "$w/out2" 2>&1) || status=$?
[ "$status" = 2 ] || fail "run --harness grok exited $status"
echo "$msg" | grep -q "no plugin for harness 'grok'" || fail "run --harness grok said: $msg"
echo "$msg"
echo "deb-test: packages built, installed, a Trial ran, grok disabled by removing its package"
