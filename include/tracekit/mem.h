/*
 * <tracekit/mem.h> -- markers for `tracekit record mem`, from the program.
 *
 * A program names the phases of its run and asks for snapshots of its live
 * heap; `tracekit record mem` records them among the allocations, and the
 * report (section "markers"), the timeline conversions (`convert --to
 * chrome|perfetto`: instant events on the calling thread's track) and
 * `tracekit sql` (the `instants` table) show them.
 *
 *     #include <tracekit/mem.h>
 *
 *     int main(void) {
 *         tracekit_mark("load");          // a phase starts
 *         load_everything();
 *         tracekit_snapshot("loaded");    // the report shows the live heap here
 *         ...
 *     }
 *
 * Nothing needs linking: the two functions are declared weak, so a program
 * built without tracekit has null pointers for them and the macros below
 * skip the calls (the program behaves the same, exit status and output
 * included). Under `tracekit record mem` the recorder library, preloaded
 * into the process, defines them, and the dynamic loader binds the weak
 * references to its definitions (PIE or not, lazy or `-Wl,-z,now`
 * binding). Compile with `-I <tracekit>/include`, or copy this file.
 *
 * Names are copied when the call is made (the string may be freed right
 * after); names longer than 255 bytes are cut to 255 (at a UTF-8 character
 * boundary), and the report says each cut name's length. Names should be
 * UTF-8. The calls are async-signal-safe and thread-safe; each records the
 * time, the calling thread and its backtrace. They allocate nothing.
 *
 * Call the functions directly only after checking them
 * (`if (tracekit_mem_mark) tracekit_mem_mark(name);`): that is what the
 * macros do.
 */
#ifndef TRACEKIT_MEM_H
#define TRACEKIT_MEM_H

#ifdef __cplusplus
extern "C" {
#endif

/* A marker: a point of the run the program names (a phase starting). */
extern void tracekit_mem_mark(const char *name) __attribute__((weak));

/* A snapshot: a marker at which the report shows the live heap (bytes and
 * blocks live, the sites holding the most). */
extern void tracekit_mem_snapshot(const char *name) __attribute__((weak));

#ifdef __cplusplus
}
#endif

/* Calls that do nothing when the program is not recorded. */
#define tracekit_mark(name)                                                   \
    do {                                                                      \
        if (tracekit_mem_mark)                                                \
            tracekit_mem_mark(name);                                          \
    } while (0)
#define tracekit_snapshot(name)                                               \
    do {                                                                      \
        if (tracekit_mem_snapshot)                                            \
            tracekit_mem_snapshot(name);                                      \
    } while (0)

#endif /* TRACEKIT_MEM_H */
