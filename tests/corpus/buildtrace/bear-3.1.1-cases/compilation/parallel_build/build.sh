touch parallel_build_1.c parallel_build_2.c parallel_build_3.c parallel_build_4.c

$CC -c -o parallel_build_1.o parallel_build_1.c &
$CC -c -o parallel_build_2.o parallel_build_2.c &
$CC -c -o parallel_build_3.o parallel_build_3.c &
$CC -c -o parallel_build_4.o parallel_build_4.c &

wait

true;
