@CC@ -c -o @T@/t/source_1.o @T@/t/source_1.c;
@CC@ -c -o @T@/t/source_2.o @T@/t/source_2.c;
