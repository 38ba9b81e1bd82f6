touch successful_build_1.c successful_build_2.c successful_build_3.c successful_build_4.c

$CC -c -o successful_build_1.o successful_build_1.c;
$CC -c -o successful_build_2.o successful_build_2.c;
$CXX -c -o successful_build_3.o successful_build_3.c;
$CXX -c -o successful_build_4.o successful_build_4.c;
