/* kbin-inspect: describe a .kbin artifact without Python or any device runtime. Prints what
 * `polykern inspect` prints (same text, same --json, same --source FMT).
 *   kbin-inspect [--json | --source FMT] K.kbin
 *   kbin-inspect --reexport OUT.kbin K.kbin   (write it again, in the current format version, from what
 *                                             was decoded: what polykern's load(...).export() writes)
 * Exit status: 0 ok, 1 error (the message names the byte offset), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polykern.h"

static int usage(FILE *f, int rc) {
    fprintf(f, "usage: kbin-inspect [--json | --source FMT | --reexport OUT.kbin] K.kbin\n");
    return rc;
}

static const char *base_name(const char *path) {   /* os.path.basename */
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int write_again(const pk_artifact *art, const char *out_path) {
    uint8_t *data;
    size_t n;
    pk_error err;
    FILE *f;
    int ok;
    if (pk_artifact_write(art, &data, &n, &err)) {
        fprintf(stderr, "kbin-inspect: error: %s\n", err.message);
        return 1;
    }
    f = fopen(out_path, "wb");
    ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    free(data);
    if (!ok) {
        fprintf(stderr, "kbin-inspect: error: cannot write %s\n", out_path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int json = 0, i, rc = 0;
    const char *path = NULL, *source = NULL, *reexport = NULL;
    pk_error err;
    pk_artifact *art;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc) source = argv[++i];
        else if (strncmp(argv[i], "--source=", 9) == 0) source = argv[i] + 9;
        else if (strcmp(argv[i], "--reexport") == 0 && i + 1 < argc) reexport = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return usage(stdout, 0);
        else if (argv[i][0] == '-' && argv[i][1]) return usage(stderr, 2);
        else if (!path) path = argv[i];
        else return usage(stderr, 2);
    }
    if (!path) return usage(stderr, 2);
    art = pk_artifact_load(path, &err);
    if (!art) {
        fprintf(stderr, "kbin-inspect: error: %s\n", err.message);
        return 1;
    }
    if (reexport) rc = write_again(art, reexport);
    else if (source) rc = pk_artifact_print_source(art, base_name(path), source, stdout, stderr);
    else if (json) pk_artifact_write_json(art, base_name(path), stdout);
    else pk_artifact_describe(art, base_name(path), stdout);
    pk_artifact_free(art);
    return rc;
}
