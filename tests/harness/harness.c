/* SPDX-License-Identifier: BSD-2-Clause */
/* The test harness (see harness.h). */
#include "harness.h"

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define HARNESS_MAX_TESTS 1024

static struct {
    const char *name;
    harness_fn fn;
} tests[HARNESS_MAX_TESTS];
static int ntests;

void harness_register(const char *name, harness_fn fn)
{
    if (ntests == HARNESS_MAX_TESTS) {
        fprintf(stderr, "harness: too many tests\n");
        abort();
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    exit(1);
}

void harness_hexdump(const char *label, const void *p, size_t n)
{
    const uint8_t *b = p;
    fprintf(stderr, "  %s (%zu):", label, n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s%02x", i % 16 ? " " : "\n    ", b[i]);
    fputc('\n', stderr);
}

uint32_t harness_xorshift32(void *ctx)
{
    uint32_t *s = ctx;
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

size_t harness_hex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int half = -1;
    for (const char *s = hex; *s; s++) {
        int v;
        if (*s >= '0' && *s <= '9')
            v = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            v = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            v = *s - 'A' + 10;
        else if (*s == ' ' || *s == '\n' || *s == '\t' || *s == '|')
            continue;
        else
            harness_fail(__FILE__, __LINE__, "bad hex character '%c'", *s);
        if (half < 0) {
            half = v;
        } else {
            if (n == cap)
                harness_fail(__FILE__, __LINE__, "hex string longer than %zu bytes", cap);
            out[n++] = (uint8_t)(half << 4 | v);
            half = -1;
        }
    }
    if (half >= 0)
        harness_fail(__FILE__, __LINE__, "odd number of hex digits");
    return n;
}

static int run_one(int i, int nofork)
{
    if (nofork) {
        tests[i].fn();
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        tests[i].fn();
        fflush(NULL);
        exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "  killed by signal %d\n", WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    int nofork = getenv("HARNESS_NOFORK") != NULL;
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        int ok = run_one(i, nofork);
        printf("%s %s\n", ok ? "PASS" : "FAIL", tests[i].name);
        fflush(stdout);
        if (ok)
            passed++;
        else
            failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
