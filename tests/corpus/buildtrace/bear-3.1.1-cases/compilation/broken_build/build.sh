echo "int test() { ;" > broken_build.c

$CC -c -o broken_build.o broken_build.c || true
