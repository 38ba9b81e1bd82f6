touch wrapper_1.c wrapper_2.c

cat > wrapper << EOF
#!/usr/bin/env sh

exec \$*
EOF

chmod +x wrapper

ORIGINAL=$CC
CC=./wrapper

$CC $ORIGINAL -c -o wrapper_1.o wrapper_1.c;
$CC $ORIGINAL -c -o wrapper_2.o wrapper_2.c;
