$CC -c "@T@/t/source_1.c" -Wall;
$CC -c "@T@/t/source_2.c" -Werror;
