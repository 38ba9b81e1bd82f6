/* Tiny assertion helpers shared by the C test programs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <trace.h>

#define CHECK(cond) do { if (!(cond)) { \
    fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)
#define OK(call) do { int rc_ = (call); if (rc_ != 0) { \
    fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, rc_, strerror(rc_)); exit(1); } } while (0)
