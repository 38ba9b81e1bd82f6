mkdir -p exists exists/config
touch exists/config/source_1.c exists/config/source_2.c
$CC -c -o exists/config/source_1.o exists/config/source_1.c
$CC -c -o exists/config/source_2.o exists/config/source_2.c
rm exists/config/source_1.c exists/config/source_2.c

mkdir -p exists exists/src
touch exists/src/source_1.c exists/src/source_2.c
$CC -c -o exists/src/source_1.o exists/src/source_1.c
$CC -c -o exists/src/source_2.o exists/src/source_2.c
