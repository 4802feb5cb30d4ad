/* Text listing and JSON dump of a parsed artifact (kbin-inspect, tests). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void cat(char *buf, size_t size, size_t *len, const char *s) {
    size_t n = strlen(s);
    if (*len >= size) return;
    if (n > size - 1 - *len) n = size - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = 0;
}

const char *pk_function_signature(const pk_function_info *f, char *buf, size_t size) {
    size_t len = 0, i;
    char t[48], piece[160];
    if (!size) return buf;
    buf[0] = 0;
    cat(buf, size, &len, f->name.ptr);
    cat(buf, size, &len, "(");
    for (i = 0; i < f->num_args; i++) {
        const pk_arg_info *a = &f->args[i];
        pk_type_name(a->code, a->bits, a->lanes, t, sizeof t);
        if (a->kind == PK_ARG_BUFFER)
            snprintf(piece, sizeof piece, "%s%.80s: Buffer[%s%s]", i ? ", " : "", a->name.ptr, t,
                     a->readonly ? ", readonly" : "");
        else
            snprintf(piece, sizeof piece, "%s%.80s: %s", i ? ", " : "", a->name.ptr, t);
        cat(buf, size, &len, piece);
    }
    cat(buf, size, &len, ")");
    return buf;
}

static void describe_module(const pk_artifact *art, size_t i, int depth, FILE *out) {
    const pk_module *m = &art->modules[i];
    size_t j;
    char sig[1024];
    fprintf(out, "%*s[%zu] %s", depth * 2, "", i, m->kind.ptr);
    if (m->layout == PK_LAYOUT_BYTES)
        fprintf(out, " (fmt %s, %zu bytes)", m->fmt.ptr, m->payload_size);
    else if (m->layout != PK_LAYOUT_ROOT)
        fprintf(out, " (fmt %s, %zu shaders)", m->fmt.ptr, m->num_shaders);
    fprintf(out, "\n");
    for (j = 0; j < m->num_functions; j++) {
        const pk_function_info *f = &m->functions[j];
        size_t k;
        fprintf(out, "%*s  %s\n", depth * 2, "", pk_function_signature(f, sig, sizeof sig));
        if (f->num_launch_tags || f->shared_bytes || f->num_attrs) {
            fprintf(out, "%*s    launch:", depth * 2, "");
            for (k = 0; k < f->num_launch_tags; k++) fprintf(out, " %s", f->launch_tags[k].ptr);
            if (!f->num_launch_tags) fprintf(out, " -");
            fprintf(out, "  shared: %llu", (unsigned long long)f->shared_bytes);
            for (k = 0; k < f->num_attrs; k++)
                fprintf(out, "  %s=%s", f->attrs[k].key.ptr, f->attrs[k].value.ptr);
            fprintf(out, "\n");
        }
    }
    for (j = 0; j < m->num_shaders; j++)
        fprintf(out, "%*s  shader %s: %zu bytes\n", depth * 2, "", m->shaders[j].name.ptr,
                m->shaders[j].size);
    if (m->num_sources) {
        fprintf(out, "%*s  sources:", depth * 2, "");
        for (j = 0; j < m->num_sources; j++)
            fprintf(out, " %s (%zu bytes)", m->sources[j].key.ptr, m->sources[j].value.len);
        fprintf(out, "\n");
    }
    for (j = 0; j < m->num_imports; j++)
        if (depth < 32) describe_module(art, (size_t)m->imports[j], depth + 1, out);
}

void pk_artifact_describe(const pk_artifact *art, const char *name, FILE *out) {
    const pk_module *root = &art->modules[0];
    size_t i;
    fprintf(out, "%s: polykern artifact, format version %u, %zu bytes, crc32 %08x\n",
            name ? name : "<artifact>", art->version, art->size, art->crc32);
    for (i = 0; i < art->num_meta; i++) {
        const char *k = art->meta[i].key.ptr, *v = art->meta[i].value.ptr;
        if (strcmp(k, "targets") == 0) continue;
        fprintf(out, "%s: %s\n", k, v);
    }
    fprintf(out, "targets:");
    for (i = 0; i < root->num_targets; i++) fprintf(out, "%s %s", i ? "," : "", root->targets[i].ptr);
    fprintf(out, "%s\n", root->num_targets ? "" : " (none)");
    fprintf(out, "sources: %s\n", art->has_sources ? "embedded" : "stripped");
    fprintf(out, "modules: %zu\n", art->num_modules);
    describe_module(art, 0, 0, out);
}

static void json_str(FILE *out, const char *s, size_t n) {
    size_t i;
    fputc('"', out);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c == '\n') fputs("\\n", out);
        else if (c == '\t') fputs("\\t", out);
        else if (c == '\r') fputs("\\r", out);
        else if (c < 0x20 || c == 0x7F) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}
#define JS(out, s) json_str(out, (s).ptr, (s).len)

static void json_kv(FILE *out, const pk_kv *kv, size_t n) {
    size_t i;
    fputc('{', out);
    for (i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        JS(out, kv[i].key);
        fputs(": ", out);
        JS(out, kv[i].value);
    }
    fputc('}', out);
}

static void json_hex(FILE *out, const uint8_t *p, size_t n) {
    size_t i;
    fputc('"', out);
    for (i = 0; i < n; i++) fprintf(out, "%02x", p[i]);
    fputc('"', out);
}

static void json_function(FILE *out, const pk_function_info *f) {
    size_t k;
    fputs("{\"name\": ", out);
    JS(out, f->name);
    fputs(", \"args\": [", out);
    for (k = 0; k < f->num_args; k++) {
        const pk_arg_info *a = &f->args[k];
        fprintf(out, "%s{\"name\": ", k ? ", " : "");
        JS(out, a->name);
        fprintf(out, ", \"kind\": \"%s\", \"code\": %u, \"bits\": %u, \"lanes\": %u, "
                "\"readonly\": %s}", a->kind == PK_ARG_BUFFER ? "buffer" : "scalar", a->code,
                a->bits, a->lanes, a->readonly ? "true" : "false");
    }
    fputs("], \"launch_tags\": [", out);
    for (k = 0; k < f->num_launch_tags; k++) {
        if (k) fputs(", ", out);
        JS(out, f->launch_tags[k]);
    }
    fprintf(out, "], \"shared_bytes\": %llu, \"attrs\": ", (unsigned long long)f->shared_bytes);
    json_kv(out, f->attrs, f->num_attrs);
    fputc('}', out);
}

void pk_artifact_write_json(const pk_artifact *art, FILE *out) {
    size_t i, j;
    fprintf(out, "{\"version\": %u, \"size\": %zu, \"crc32\": %u, \"has_sources\": %s, \"meta\": ",
            art->version, art->size, art->crc32, art->has_sources ? "true" : "false");
    json_kv(out, art->meta, art->num_meta);
    fputs(", \"modules\": [", out);
    for (i = 0; i < art->num_modules; i++) {
        const pk_module *m = &art->modules[i];
        fprintf(out, "%s\n  {\"index\": %zu, \"offset\": %llu, \"kind\": ", i ? "," : "", i,
                (unsigned long long)m->offset);
        JS(out, m->kind);
        fputs(", \"fmt\": ", out);
        JS(out, m->fmt);
        fputs(", \"imports\": [", out);
        for (j = 0; j < m->num_imports; j++)
            fprintf(out, "%s%llu", j ? ", " : "", (unsigned long long)m->imports[j]);
        fputs("], \"functions\": {", out);
        for (j = 0; j < m->num_functions; j++) {
            if (j) fputs(", ", out);
            JS(out, m->functions[j].name);
            fputs(": ", out);
            json_function(out, &m->functions[j]);
        }
        fputc('}', out);
        if (m->layout == PK_LAYOUT_ROOT) {
            fputs(", \"targets\": [", out);
            for (j = 0; j < m->num_targets; j++) {
                if (j) fputs(", ", out);
                JS(out, m->targets[j]);
            }
            fputc(']', out);
        } else if (m->layout == PK_LAYOUT_BYTES) {
            fprintf(out, ", \"payload_size\": %zu, \"payload_crc32\": %u, \"payload_hex\": ",
                    m->payload_size, pk_crc32(0, m->payload, m->payload_size));
            json_hex(out, m->payload, m->payload_size);
        } else {
            fputs(", \"shaders\": {", out);
            for (j = 0; j < m->num_shaders; j++) {
                if (j) fputs(", ", out);
                JS(out, m->shaders[j].name);
                fputs(": ", out);
                json_hex(out, m->shaders[j].data, m->shaders[j].size);
            }
            fputc('}', out);
        }
        fputs(", \"sources\": ", out);
        json_kv(out, m->sources, m->num_sources);
        fputc('}', out);
    }
    fputs("\n]}\n", out);
}
