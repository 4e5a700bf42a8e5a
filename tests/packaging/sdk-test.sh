#!/bin/sh
# The plugin SDK, proven from outside: install trialbox into a temporary
# prefix, build examples/hello-harness against that prefix only (once with
# find_package, once with pkg-config), install the plugin there, and run a
# Trial with it through the installed trialbox with no environment set up.
#   sdk-test.sh SOURCE_DIR
set -eu
src=$(cd "$1" && pwd)
w=$(mktemp -d /tmp/trialbox-sdk.XXXXXX)
chmod 755 "$w"
trap 'rm -rf "$w"' EXIT
prefix="$w/prefix"
fail() { echo "sdk-test: $*" >&2; exit 1; }

echo "== install trialbox into $prefix"
cmake -S "$src" -B "$w/build" -DCMAKE_INSTALL_PREFIX="$prefix" -DTRIALBOX_TESTS=OFF >/dev/null
cmake --build "$w/build" -j"$(nproc)" >/dev/null
cmake --install "$w/build" >/dev/null

# Nothing of the source tree or the build may be used from here on.
clean_env="env -i PATH=/usr/bin:/bin HOME=$w/home"
mkdir -p "$w/home"

echo "== build examples/hello-harness with find_package"
cp -r "$src/examples/hello-harness" "$w/example"
$clean_env cmake -S "$w/example" -B "$w/ex-cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
$clean_env cmake --build "$w/ex-cmake" >/dev/null
[ -f "$w/ex-cmake/hello-harness.so" ] || fail "find_package build made no hello-harness.so"

echo "== build examples/hello-harness with pkg-config"
$clean_env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cmake -S "$w/example" -B "$w/ex-pc" -DHELLO_USE_PKGCONFIG=ON >/dev/null
$clean_env cmake --build "$w/ex-pc" >/dev/null
[ -f "$w/ex-pc/hello-harness.so" ] || fail "pkg-config build made no hello-harness.so"
# And by hand, as the man page says.
cc -shared -fPIC -Wall -Werror $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags trialbox-plugin) \
        -o "$w/by-hand.so" "$w/example/hello-harness.c"

echo "== install it and run a Trial through the installed trialbox"
$clean_env cmake --install "$w/ex-cmake" >/dev/null
[ -f "$prefix/lib/trialbox/plugins/hello-harness.so" ] || fail "the plugin was not installed into the plugin folder"
$clean_env "$prefix/bin/trialbox" harnesses | grep -q '^hello-harness  *ready' || fail "harnesses does not list hello-harness as ready"
mkdir "$w/repo"
# Root's Trial of a root-owned repository must say it accepts a root session.
root_session=""
[ "$(id -u)" != 0 ] || root_session=--root-session
# No environment at all: no PATH, no HOME, no TRIALBOX_PLUGIN_PATH.
out=$(env -i "$prefix/bin/trialbox" run -q $root_session --harness hello-harness --repo "$w/repo" \
        --output-dir "$w/out" -- -c 'echo "$HELLO_GREETING"; pwd')
[ "$out" = "hello from hello-harness
$w/repo" ] || fail "the Trial printed: $out"
grep -q '"outcome":"completed"' "$w/out/outcome.json" || fail "outcome: $(cat "$w/out/outcome.json")"
grep -q '"sandboxed":true' "$w/out/outcome.json" || fail "the Trial was not sandboxed"
echo "sdk-test: the out-of-tree plugin ran a Trial through the installed trialbox"
