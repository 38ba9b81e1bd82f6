echo "int foo() { return 1; }" > multiple_source_build_1.c
echo "int bar() { return 1; }" > multiple_source_build_2.c
echo "int main() { return 0; }" > multiple_source_build_3.c

$CC -o multiple_source_build multiple_source_build_1.c multiple_source_build_2.c multiple_source_build_3.c
