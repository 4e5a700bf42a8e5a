# add A B: prints A + B
add() { echo $(( $1 - $2 )); }
