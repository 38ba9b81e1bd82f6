touch duplicate_entries_1.c duplicate_entries_2.c

$CC -c duplicate_entries_1.c -o duplicate_entries_1.o;
$CC -c duplicate_entries_2.c -o duplicate_entries_2.o;
$CC -c duplicate_entries_1.c -o duplicate_entries_3.o -D_FLAG=value;
$CC -c duplicate_entries_2.c -o duplicate_entries_4.o -D_FLAG=value;
$CC -c duplicate_entries_1.c -o duplicate_entries_1.o;
$CC -c duplicate_entries_2.c -o duplicate_entries_2.o;
$CC -c duplicate_entries_1.c -o duplicate_entries_3.o -D_FLAG=value;
$CC -c duplicate_entries_2.c -o duplicate_entries_4.o -D_FLAG=value;
