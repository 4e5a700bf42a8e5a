#!/bin/sh
# The demo's probe: run as a Trial's session, it prints what the session can
# and cannot see. Its argument is a file in the host user's real home.
secret_file=${1:-}
yes_no() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }

echo "session folder:          $(pwd)"
echo "HOME:                    $HOME"
echo "can write the repo:      $(yes_no touch .probe-was-here)"
echo "can write /usr:          $(yes_no touch /usr/.probe)"
if [ -n "$secret_file" ]; then
        echo "sees $secret_file: $(yes_no test -e "$secret_file")"
fi
echo "processes it can see:    $(ls -d /proc/[0-9]* | wc -l)"
echo "OPENAI_API_KEY set:      $(yes_no test -n "${OPENAI_API_KEY:-}")"
echo "environment names:       $(env | cut -d= -f1 | sort | tr '\n' ' ')"
for tool in cargo python3 node git; do
        if command -v "$tool" >/dev/null 2>&1; then
                echo "$tool: $("$tool" --version 2>&1 | head -n 1)"
        fi
done
