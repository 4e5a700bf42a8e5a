# max A B: prints the larger of A and B
max() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }
