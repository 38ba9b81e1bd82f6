// Ring sample: FDR mode with a small buffer_max recycles buffers, so the
// flushed log keeps only each thread's newest blocks. Two threads call a
// three-deep chain many times; the log is flushed from inside calls that
// are still open. Expect exits whose enters were overwritten (at the start
// of each thread's surviving blocks) and enters without exits (at the end).
#include <pthread.h>
#include <stdio.h>
#include "xray_driver.h"

static volatile long sink;

__attribute__((noinline)) void leaf(long i) { sink += i; }
__attribute__((noinline)) void middle(long i) { leaf(i); leaf(i + 1); }
__attribute__((noinline)) void outer(long i) { middle(i); }

static volatile int stop_worker;

__attribute__((noinline)) void worker_loop(void) {
  for (long i = 0; !stop_worker; i++)
    outer(i);
}

__attribute__((noinline)) void *worker(void *arg) {
  (void)arg;
  worker_loop();
  return 0;
}

// Flushes while `flush_inside` and main's caller chain are open.
__attribute__((noinline)) void flush_inside(void) { sample_end(); }

__attribute__((noinline)) void run(void) {
  pthread_t t;
  pthread_create(&t, 0, worker, 0);
  for (long i = 0; i < 20000; i++)
    outer(i);
  flush_inside();
  stop_worker = 1;
  pthread_join(t, 0);
}

__attribute__((xray_never_instrument)) int main(void) {
  sample_begin();
  run();
  printf("ring done %ld\n", sink);
  return 0;
}
