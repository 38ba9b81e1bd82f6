cat > define_with_quote.c <<EOF
#include <cstdio>

EXPORT void foo(void) {
  printf("Hello world!\n");
}

int main() {
  foo();
}
EOF

$CXX -DEXPORT="extern \"C\"" -o define_with_quote define_with_quote.c;
