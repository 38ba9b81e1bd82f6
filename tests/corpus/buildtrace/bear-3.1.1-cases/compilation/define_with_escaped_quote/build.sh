cat > define_with_escaped_quote.c <<EOF
#include <stdio.h>

int main() {
  printf(MESSAGE);
  return 0;
}
EOF

$CC '-DMESSAGE="Hello World\n"' -o define_with_escaped_quote define_with_escaped_quote.c;
