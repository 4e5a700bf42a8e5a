# greet NAME: prints "Hello, NAME!"
greet() { printf 'Hello %s\n' "$1"; }
