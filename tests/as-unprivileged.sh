#!/bin/sh
# Run a test executable as the unprivileged user `nobody` (when we are root),
# with a home of its own, so bwrap must create a user namespace.
set -eu
if [ "$(id -u)" != 0 ]; then
        echo "not root: the suite already ran unprivileged"
        exit 77
fi
home=$(mktemp -d /tmp/tb-nobody-home.XXXXXX)
chown nobody:nogroup "$home"
trap 'rm -rf "$home"' EXIT
# The build tree must be readable by nobody (it is, with the usual umask).
exec setpriv --reuid=nobody --regid=nogroup --clear-groups --reset-env \
        env HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin CK_DEFAULT_TIMEOUT="${CK_DEFAULT_TIMEOUT:-60}" "$@"
