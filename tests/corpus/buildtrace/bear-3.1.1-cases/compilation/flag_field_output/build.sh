touch field_output_1.c field_output_2.c

$CC -c -o field_output_1.o field_output_1.c;
$CC -c -o field_output_2.o field_output_2.c;
