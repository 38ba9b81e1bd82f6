touch successful_build_1.cu successful_build_2.cu

$CC -c -o successful_build_1.o successful_build_1.cu;
$CC -c -o successful_build_2.o successful_build_2.cu;
