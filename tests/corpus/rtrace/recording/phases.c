/* A small program for the memory report corpus: a phase that grows and
 * frees (consumption rises then falls), temporaries (freed by the next
 * call), leaks from two places, and a forked child that allocates too. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[200];

__attribute__((noinline)) static void *grow(size_t n) { return malloc(n); }

__attribute__((noinline)) static void temporaries(int n) {
    for (int i = 0; i < n; i++) {
        char *t = malloc(64 + i);
        memset(t, 0, 64);
        free(t);
    }
}

__attribute__((noinline)) static void leak_small(int n) {
    for (int i = 0; i < n; i++) {
        char *p = malloc(24);
        memset(p, 1, 24);
    }
}

__attribute__((noinline)) static void leak_big(void) {
    char *p = malloc(100000);
    memset(p, 2, 100000);
}

int main(void) {
    for (int i = 0; i < 200; i++) {
        keep[i] = grow(1000 + i);
        if (i % 20 == 0)
            usleep(2000);
    }
    temporaries(50);
    for (int i = 0; i < 200; i++)
        free(keep[i]);
    leak_small(10);
    leak_big();
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 30; i++)
            keep[i] = grow(500);
        leak_small(3);
        _exit(3);
    }
    int st;
    waitpid(pid, &st, 0);
    return 0;
}
