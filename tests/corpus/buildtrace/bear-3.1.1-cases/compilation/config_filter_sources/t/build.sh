$CC -c @T@/t/source_1.c;
$CC -c @T@/t/source_2.c;
$CC -c @T@/t/exclude/source_1.c;
$CC -c @T@/t/exclude/source_2.c;
