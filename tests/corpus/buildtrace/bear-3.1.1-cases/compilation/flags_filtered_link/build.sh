PREFIX="foobar";
LD_FLAGS="-o lib${PREFIX}.so -shared -Wl,-soname,${PREFIX}"

echo "int foo() { return 2; }" > flags_filtered_link_1.c;
echo "int bar() { return 2; }" > flags_filtered_link_2.c;
echo "int main() { return 0; }" > flags_filtered_link_3.c;
echo "int main() { return 0; }" > flags_filtered_link_4.c;

$CC -c -o flags_filtered_link_1.o -fpic flags_filtered_link_1.c;
$CC -c -o flags_filtered_link_2.o -fpic flags_filtered_link_2.c;
$CC ${LD_FLAGS} flags_filtered_link_1.o flags_filtered_link_2.o;

$CC -o flags_filtered_link_3 -l${PREFIX}  -L.  flags_filtered_link_3.c;
$CC -o flags_filtered_link_4 -l ${PREFIX} -L . flags_filtered_link_4.c;
