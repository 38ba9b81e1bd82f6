touch use_cc_1.c use_cc_2.c

$CC -c -o use_cc_1.o use_cc_1.c;
$CC -c -o use_cc_2.o use_cc_2.c;
