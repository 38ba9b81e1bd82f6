touch flags_filtered_preproc_1.c flags_filtered_preproc_2.c

# these shall not be in the output
$CC -c -M  -o flags_filtered_preproc_1.d flags_filtered_preproc_1.c;
$CC -c -MM -o flags_filtered_preproc_2.d flags_filtered_preproc_2.c;

# these shall be in the output
$CC -c -MD  -MF flags_filtered_preproc_1.d -o flags_filtered_preproc_1.o flags_filtered_preproc_1.c;
$CC -c -MMD -MF flags_filtered_preproc_2.d -o flags_filtered_preproc_2.o flags_filtered_preproc_2.c;
