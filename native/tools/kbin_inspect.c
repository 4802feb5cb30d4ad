/* kbin-inspect: list what a .kbin artifact holds, without Python or any device runtime.
 *   kbin-inspect [--json] [--source MODULE[:FMT]] FILE.kbin
 * Exit status: 0 ok, 1 artifact error (message names the offset), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polykern.h"

static int usage(void) {
    fprintf(stderr, "usage: kbin-inspect [--json] [--source MODULE[:FMT]] FILE.kbin\n");
    return 2;
}

static int print_source(const pk_artifact *art, const char *spec) {
    char *end;
    unsigned long idx = strtoul(spec, &end, 10);
    const pk_module *m;
    const pk_str *text;
    if (end == spec || idx >= art->num_modules) {
        fprintf(stderr, "kbin-inspect: no module '%s' (the artifact has %zu)\n", spec,
                art->num_modules);
        return 1;
    }
    m = &art->modules[idx];
    if (!m->num_sources) {
        fprintf(stderr, "kbin-inspect: module %lu has no embedded sources%s\n", idx,
                art->has_sources ? "" : " (built with --strip-sources)");
        return 1;
    }
    text = *end == ':' ? pk_kv_find(m->sources, m->num_sources, end + 1) : &m->sources[0].value;
    if (!text) {
        size_t i;
        fprintf(stderr, "kbin-inspect: module %lu has no '%s' source; available:", idx, end + 1);
        for (i = 0; i < m->num_sources; i++) fprintf(stderr, " %s", m->sources[i].key.ptr);
        fprintf(stderr, "\n");
        return 1;
    }
    fwrite(text->ptr, 1, text->len, stdout);
    return 0;
}

int main(int argc, char **argv) {
    int json = 0, i, rc = 0;
    const char *path = NULL, *source = NULL;
    pk_error err;
    pk_artifact *art;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc) source = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return usage() - 2;
        else if (argv[i][0] == '-' && argv[i][1]) return usage();
        else if (!path) path = argv[i];
        else return usage();
    }
    if (!path) return usage();
    art = pk_artifact_load(path, &err);
    if (!art) {
        fprintf(stderr, "kbin-inspect: error: %s\n", err.message);
        return 1;
    }
    if (source) rc = print_source(art, source);
    else if (json) pk_artifact_write_json(art, stdout);
    else pk_artifact_describe(art, path, stdout);
    pk_artifact_free(art);
    return rc;
}
