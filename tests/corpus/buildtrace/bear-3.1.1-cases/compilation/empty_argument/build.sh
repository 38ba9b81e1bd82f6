touch empty_argument_1.c empty_argument_2.c

# empty argument for a command
$ECHO "" "";

# empty argument for a compiler
$CC -c -o empty_argument_1.o empty_argument_1.c "" || true;
$CC -c -o empty_argument_2.o "" empty_argument_2.c || true;
