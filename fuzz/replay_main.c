/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Replays fuzz corpora without libFuzzer: every regular file under the given files/directories is
 * passed once to LLVMFuzzerTestOneInput. Used as a CTest regression test in gcc builds.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return 1;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return 1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *child = malloc(n);
        if (!child) {
            rc = 1;
            break;
        }
        snprintf(child, n, "%s/%s", path, e->d_name);
        rc |= run_path(child, count);
        free(child);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0, rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i], &count);
    printf("replayed %d inputs\n", count);
    if (count == 0) {
        fprintf(stderr, "no corpus inputs found\n");
        return 1;
    }
    return rc;
}
