$CC -c @T@/t/source_1.c;
$CC -c @T@/t/source_2.c;
$CXX -c @T@/t/exclude/source_1.cc;
$CXX -c @T@/t/exclude/source_2.cc;
