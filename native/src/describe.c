/* What `polykern inspect` prints (python/polykern/cli.py _describe_lines, _print_source and
 * artifact.read_artifact as JSON), reproduced byte for byte from a parsed artifact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------- small helpers */

static const char *type_str(const pk_arg_info *a, char *buf, size_t size) {
    char t[48];
    pk_type_name(a->code, a->bits, a->lanes, t, sizeof t);
    if (a->kind == PK_ARG_BUFFER)
        snprintf(buf, size, "Buffer[%s%s]", t, a->readonly ? ", readonly" : "");
    else
        snprintf(buf, size, "%s", t);
    return buf;
}

/* FunctionInfo.signature() piece by piece: emit(ctx, bytes, n) gets the raw text in order. */
typedef void (*emit_fn)(void *ctx, const char *s, size_t n);
static void signature_pieces(const pk_function_info *f, emit_fn emit, void *ctx) {
    size_t i;
    char t[64];
    emit(ctx, f->name.ptr, f->name.len);
    emit(ctx, "(", 1);
    for (i = 0; i < f->num_args; i++) {
        if (i) emit(ctx, ", ", 2);
        emit(ctx, f->args[i].name.ptr, f->args[i].name.len);
        emit(ctx, ": ", 2);
        type_str(&f->args[i], t, sizeof t);
        emit(ctx, t, strlen(t));
    }
    emit(ctx, ")", 1);
}

typedef struct { char *buf; size_t size, len; } sig_buf;
static void emit_buf(void *ctx, const char *s, size_t n) {   /* escaped, cut at the buffer's end */
    sig_buf *b = (sig_buf *)ctx;
    b->len += pk_escape(s, n, b->buf + b->len, b->size - b->len);
}
static void emit_escaped(void *ctx, const char *s, size_t n) { pk_write_escaped((FILE *)ctx, s, n, 0); }

/* The signature with names escaped as `polykern inspect` shows them (never cut at a NUL byte). */
const char *pk_function_signature(const pk_function_info *f, char *buf, size_t size) {
    sig_buf b;
    if (!size) return buf;
    buf[0] = 0;
    b.buf = buf;
    b.size = size;
    b.len = 0;
    signature_pieces(f, emit_buf, &b);
    return buf;
}

int pk_payload_is_text(const uint8_t *data, size_t n) {
    return (n == 0 || memchr(data, 0, n) == NULL) && pk_utf8_error(data, n) == (size_t)-1;
}

/* decode one code point of valid UTF-8 */
static uint32_t next_cp(const uint8_t *p, size_t *i) {
    uint8_t c = p[*i];
    uint32_t cp;
    size_t len, k;
    if (c < 0x80) { (*i)++; return c; }
    len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    cp = c & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
    for (k = 1; k < len; k++) cp = (cp << 6) | (p[*i + k] & 0x3Fu);
    *i += len;
    return cp;
}

/* len(text.splitlines()) of valid UTF-8 */
static size_t count_lines(const uint8_t *p, size_t n) {
    size_t i = 0, lines = 0;
    int open = 0;
    while (i < n) {
        uint32_t cp = next_cp(p, &i);
        if (cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
            cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
            if (cp == '\r' && i < n && p[i] == '\n') i++;
            lines++;
            open = 0;
        } else {
            open = 1;
        }
    }
    return lines + (size_t)open;
}

static uint16_t rd16(const uint8_t *p, int big) {
    return big ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}
static uint32_t rd32(const uint8_t *p, int big) {
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

const char *pk_describe_binary(const uint8_t *d, size_t n, char *buf, size_t size) {
    static const struct { unsigned m; const char *name; } machines[] = {
        {3, "x86"}, {40, "ARM"}, {62, "x86-64"}, {164, "Hexagon"}, {183, "AArch64"},
        {190, "NVIDIA CUDA"}, {224, "AMD GPU"}, {243, "RISC-V"}, {247, "BPF"}};
    static const char *types[] = {NULL, "relocatable object", "executable", "shared object"};
    if (n >= 20 && memcmp(d, "\x7f" "ELF", 4) == 0) {
        const char *bits = d[4] == 1 ? "32-bit" : d[4] == 2 ? "64-bit" : "?-bit";
        int big = d[5] == 2;
        unsigned type = rd16(d + 16, big), machine = rd16(d + 18, big), i;
        char tbuf[32], mbuf[32];
        const char *tn = type >= 1 && type <= 3 ? types[type] : NULL, *mn = NULL;
        for (i = 0; i < sizeof machines / sizeof machines[0]; i++)
            if (machines[i].m == machine) mn = machines[i].name;
        if (!tn) { snprintf(tbuf, sizeof tbuf, "type %u", type); tn = tbuf; }
        if (!mn) { snprintf(mbuf, sizeof mbuf, "machine %u", machine); mn = mbuf; }
        snprintf(buf, size, "ELF %s %s, %s (%zu bytes)", bits, tn, mn, n);
    } else if (n >= 20 && n % 4 == 0 &&
               (memcmp(d, "\x03\x02\x23\x07", 4) == 0 || memcmp(d, "\x07\x23\x02\x03", 4) == 0)) {
        uint32_t v = rd32(d + 4, d[0] == 0x07);
        snprintf(buf, size, "SPIR-V module, version %u.%u (%zu bytes)", (v >> 16) & 0xFF,
                 (v >> 8) & 0xFF, n);
    } else if (n >= 4 && memcmp(d, "BC\xc0\xde", 4) == 0) {
        snprintf(buf, size, "LLVM bitcode (%zu bytes)", n);
    } else if (n >= 4 && memcmp(d, "MTLB", 4) == 0) {
        snprintf(buf, size, "Metal library (%zu bytes)", n);
    } else if (pk_payload_is_text(d, n)) {
        size_t lines = count_lines(d, n);
        snprintf(buf, size, "text, %zu line%s (%zu bytes)", lines, lines == 1 ? "" : "s", n);
    } else {
        snprintf(buf, size, "binary data (%zu bytes)", n);
    }
    return buf;
}

/* cli._size */
static const char *human_size(size_t n, char *buf, size_t size) {
    if (n < 10240) snprintf(buf, size, "%zu B", n);
    else snprintf(buf, size, "%.1f KiB", (double)n / 1024.0);
    return buf;
}

static void print_list(FILE *out, const uint64_t *v, size_t n) {   /* Python list repr */
    size_t i;
    fputc('[', out);
    for (i = 0; i < n; i++) fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
    fputc(']', out);
}

/* ------------------------------------------------------------- text listing */

void pk_artifact_describe(const pk_artifact *art, const char *file, FILE *out) {
    const pk_module *root = &art->modules[0];
    const pk_str *compiler = pk_kv_find(art->meta, art->num_meta, "compiler");
    size_t i, j, width = 0;
    char sz[32], desc[128];
    pk_write_escaped(out, file, strlen(file), 0);
    fprintf(out, ": polykern artifact (format %u), %zu bytes, crc32 0x%08x\n", art->version, art->size,
            art->crc32);
    fprintf(out, "  compiler: ");
    if (compiler) pk_write_escaped(out, compiler->ptr, compiler->len, 0);
    else fprintf(out, "(unknown)");
    fprintf(out, "\n  targets:  ");
    for (i = 0; i < root->num_targets; i++) {
        if (i) fprintf(out, " | ");
        pk_write_escaped(out, root->targets[i].ptr, root->targets[i].len, 0);
    }
    /* ' | '.join(targets) or '(none)' */
    if (root->num_targets == 0 || (root->num_targets == 1 && root->targets[0].len == 0))
        fprintf(out, "(none)");
    fprintf(out, "\n  sources:  %s\n", art->has_sources ? "embedded" : "stripped");
    for (i = 0; i < art->num_meta; i++) {
        const pk_str *k = &art->meta[i].key, *v = &art->meta[i].value;
        if ((k->len == 8 && memcmp(k->ptr, "compiler", 8) == 0) || (k->len == 7 && memcmp(k->ptr, "targets", 7) == 0))
            continue;
        fprintf(out, "  ");
        pk_write_escaped(out, k->ptr, k->len, 0);
        fprintf(out, ": ");
        pk_write_escaped(out, v->ptr, v->len, 0);
        fputc('\n', out);
    }
    fprintf(out, "kernels:\n");
    for (i = 0; i < root->num_functions; i++) {
        const pk_function_info *f = &root->functions[i];
        int any = 0;
        fprintf(out, "  ");
        signature_pieces(f, emit_escaped, out);
        if (f->num_launch_tags) {
            fprintf(out, "   [");
            for (j = 0; j < f->num_launch_tags; j++) {
                if (j) fputc(' ', out);
                pk_write_escaped(out, f->launch_tags[j].ptr, f->launch_tags[j].len, 0);
            }
            any = 1;
        }
        if (f->shared_bytes) {
            fprintf(out, "%sshared %llu B", any ? "; " : "   [", (unsigned long long)f->shared_bytes);
            any = 1;
        }
        for (j = 0; j < f->num_attrs; j++) {
            fprintf(out, "%s", any ? "; " : "   [");
            pk_write_escaped(out, f->attrs[j].key.ptr, f->attrs[j].key.len, 0);
            fputc('=', out);
            pk_write_escaped(out, f->attrs[j].value.ptr, f->attrs[j].value.len, 0);
            any = 1;
        }
        fprintf(out, "%s\n", any ? "]" : "");
    }
    if (!root->num_functions) fprintf(out, "  (none)\n");
    fprintf(out, "modules:\n");
    for (i = 0; i < art->num_modules; i++)
        if (art->modules[i].kind.len > width) width = art->modules[i].kind.len;
    for (i = 0; i < art->num_modules; i++) {
        const pk_module *m = &art->modules[i];
        fprintf(out, "  [%zu] %-*s", i, (int)width, m->kind.ptr);
        if (i == 0) {
            fprintf(out, "  imports ");
            print_list(out, m->imports, m->num_imports);
            fputc('\n', out);
        } else {
            fprintf(out, "  fmt=");
            pk_write_escaped(out, m->fmt.ptr, m->fmt.len, 0);
            fprintf(out, "  %s  kernels: ", human_size(m->encoded_size, sz, sizeof sz));
            for (j = 0; j < m->num_functions; j++) {
                if (j) fprintf(out, ", ");
                pk_write_escaped(out, m->functions[j].name.ptr, m->functions[j].name.len, 0);
            }
            if (!m->num_functions) fputc('-', out);
            if (m->num_imports) {
                fprintf(out, "  imports ");
                print_list(out, m->imports, m->num_imports);
            }
            fputc('\n', out);
            if (m->layout == PK_LAYOUT_BYTES)
                fprintf(out, "        payload: %s\n",
                        pk_describe_binary(m->payload, m->payload_size, desc, sizeof desc));
            for (j = 0; j < m->num_shaders; j++) {
                fprintf(out, "        shader ");
                pk_write_escaped(out, m->shaders[j].name.ptr, m->shaders[j].name.len, 0);
                fprintf(out, ": %s\n", pk_describe_binary(m->shaders[j].data, m->shaders[j].size, desc, sizeof desc));
            }
        }
        if (m->num_sources) {
            fprintf(out, "        sources: ");
            for (j = 0; j < m->num_sources; j++) {
                if (j) fprintf(out, ", ");
                pk_write_escaped(out, m->sources[j].key.ptr, m->sources[j].key.len, 0);
                fprintf(out, " (%s)", human_size(m->sources[j].value.len, sz, sizeof sz));
            }
            fputc('\n', out);
        } else if (i != 0) {
            fprintf(out, "        sources: none embedded%s\n", art->has_sources ? "" : " (stripped)");
        }
    }
}

/* ------------------------------------------------------------- JSON (json.dumps indent=2) */

typedef struct jw {
    FILE *out;
    int depth;
    unsigned char first[64];
} jw;

static void jw_chars(jw *j, const char *s, size_t n) {   /* ensure_ascii=True escaping, no quotes */
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp = next_cp(p, &i);
        switch (cp) {
        case '"': fputs("\\\"", j->out); break;
        case '\\': fputs("\\\\", j->out); break;
        case '\n': fputs("\\n", j->out); break;
        case '\r': fputs("\\r", j->out); break;
        case '\t': fputs("\\t", j->out); break;
        case '\b': fputs("\\b", j->out); break;
        case '\f': fputs("\\f", j->out); break;
        default:
            if (cp >= 0x20 && cp < 0x7F) fputc((int)cp, j->out);
            else if (cp < 0x10000) fprintf(j->out, "\\u%04x", cp);
            else {
                cp -= 0x10000;
                fprintf(j->out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            }
        }
    }
}
static void jw_str(jw *j, const char *s, size_t n) {
    fputc('"', j->out);
    jw_chars(j, s, n);
    fputc('"', j->out);
}
static void emit_json(void *ctx, const char *s, size_t n) { jw_chars((jw *)ctx, s, n); }

static void jw_item(jw *j) {   /* separator + newline + indent before a value or key */
    if (j->depth == 0) return;
    if (!j->first[j->depth]) fputc(',', j->out);
    j->first[j->depth] = 0;
    fprintf(j->out, "\n%*s", 2 * j->depth, "");
}
static void jw_open(jw *j, char c) {
    fputc(c, j->out);
    if (j->depth < 63) j->depth++;
    j->first[j->depth] = 1;
}
static void jw_close(jw *j, char c) {
    int empty = j->first[j->depth];
    j->depth--;
    if (!empty) fprintf(j->out, "\n%*s", 2 * j->depth, "");
    fputc(c, j->out);
}
static void jw_key(jw *j, const char *k) {
    jw_item(j);
    jw_str(j, k, strlen(k));
    fputs(": ", j->out);
}
static void jw_kstr(jw *j, const char *k, const pk_str *v) {
    jw_key(j, k);
    jw_str(j, v->ptr, v->len);
}
static void jw_kcstr(jw *j, const char *k, const char *v) {
    jw_key(j, k);
    jw_str(j, v, strlen(v));
}
static void jw_kint(jw *j, const char *k, unsigned long long v) {
    jw_key(j, k);
    fprintf(j->out, "%llu", v);
}
static void jw_kbool(jw *j, const char *k, int v) {
    jw_key(j, k);
    fputs(v ? "true" : "false", j->out);
}
static void jw_kv_map(jw *j, const char *k, const pk_kv *kv, size_t n) {
    size_t i;
    jw_key(j, k);
    jw_open(j, '{');
    for (i = 0; i < n; i++) {
        jw_item(j);
        jw_str(j, kv[i].key.ptr, kv[i].key.len);
        fputs(": ", j->out);
        jw_str(j, kv[i].value.ptr, kv[i].value.len);
    }
    jw_close(j, '}');
}
static void jw_str_list(jw *j, const char *k, const pk_str *v, size_t n) {
    size_t i;
    jw_key(j, k);
    jw_open(j, '[');
    for (i = 0; i < n; i++) {
        jw_item(j);
        jw_str(j, v[i].ptr, v[i].len);
    }
    jw_close(j, ']');
}

static void jw_function(jw *j, const pk_function_info *f) {   /* FunctionInfo.to_dict */
    size_t i;
    char buf[2048];
    jw_item(j);
    jw_open(j, '{');
    jw_key(j, "args");
    jw_open(j, '[');
    for (i = 0; i < f->num_args; i++) {
        const pk_arg_info *a = &f->args[i];
        jw_item(j);
        jw_open(j, '{');
        jw_kint(j, "bits", a->bits);
        jw_kint(j, "code", a->code);
        jw_kcstr(j, "kind", a->kind == PK_ARG_BUFFER ? "buffer" : "scalar");
        jw_kint(j, "lanes", a->lanes);
        jw_kstr(j, "name", &a->name);
        jw_kbool(j, "readonly", a->readonly);
        jw_kcstr(j, "type", type_str(a, buf, sizeof buf));
        jw_close(j, '}');
    }
    jw_close(j, ']');
    jw_kv_map(j, "attrs", f->attrs, f->num_attrs);
    jw_str_list(j, "launch_tags", f->launch_tags, f->num_launch_tags);
    jw_kstr(j, "name", &f->name);
    jw_kint(j, "shared_bytes", f->shared_bytes);
    jw_key(j, "signature");
    fputc('"', j->out);
    signature_pieces(f, emit_json, j);
    fputc('"', j->out);
    jw_close(j, '}');
}

static void jw_payload(jw *j, const uint8_t *d, size_t n) {   /* artifact._payload_dict */
    char buf[128], sha[65];
    int text = pk_payload_is_text(d, n);
    jw_open(j, '{');
    jw_kcstr(j, "description", pk_describe_binary(d, n, buf, sizeof buf));
    jw_kbool(j, "is_text", text);
    pk_sha256_hex(d, n, sha);
    jw_kcstr(j, "sha256", sha);
    jw_kint(j, "size", n);
    if (text) {
        jw_key(j, "text");
        jw_str(j, (const char *)d, n);
    }
    jw_close(j, '}');
}

static void jw_module(jw *j, const pk_artifact *art, size_t i) {
    const pk_module *m = &art->modules[i];
    size_t k;
    char sha[65];
    jw_item(j);
    jw_open(j, '{');
    jw_kstr(j, "fmt", &m->fmt);
    if (i) {
        jw_key(j, "function_info");
        jw_open(j, '[');
        for (k = 0; k < m->num_functions; k++) jw_function(j, &m->functions[k]);
        jw_close(j, ']');
    }
    jw_key(j, "functions");
    jw_open(j, '[');
    for (k = 0; k < m->num_functions; k++) {
        jw_item(j);
        jw_str(j, m->functions[k].name.ptr, m->functions[k].name.len);
    }
    jw_close(j, ']');
    jw_key(j, "imports");
    jw_open(j, '[');
    for (k = 0; k < m->num_imports; k++) {
        jw_item(j);
        fprintf(j->out, "%llu", (unsigned long long)m->imports[k]);
    }
    jw_close(j, ']');
    jw_kint(j, "index", i);
    jw_kstr(j, "kind", &m->kind);
    jw_kcstr(j, "layout", pk_layout_name(m->layout));
    jw_kint(j, "offset", m->offset);
    if (m->layout == PK_LAYOUT_BYTES) {
        jw_key(j, "payload");
        jw_payload(j, m->payload, m->payload_size);
    }
    pk_sha256_hex(m->encoded, m->encoded_size, sha);
    jw_kcstr(j, "sha256", sha);
    if (m->layout == PK_LAYOUT_SMAP || m->layout == PK_LAYOUT_WEBGPU) {
        jw_key(j, "shaders");
        jw_open(j, '{');
        for (k = 0; k < m->num_shaders; k++) {
            jw_item(j);
            jw_str(j, m->shaders[k].name.ptr, m->shaders[k].name.len);
            fputs(": ", j->out);
            jw_payload(j, m->shaders[k].data, m->shaders[k].size);
        }
        jw_close(j, '}');
    }
    jw_kint(j, "size", m->encoded_size);
    jw_kv_map(j, "sources", m->sources, m->num_sources);
    if (m->layout == PK_LAYOUT_ROOT) jw_str_list(j, "targets", m->targets, m->num_targets);
    jw_close(j, '}');
}

void pk_artifact_write_json(const pk_artifact *art, const char *file, FILE *out) {
    jw j;
    size_t i;
    char crc[16];
    const pk_module *root = &art->modules[0];
    memset(&j, 0, sizeof j);
    j.out = out;
    jw_open(&j, '{');
    snprintf(crc, sizeof crc, "0x%08x", art->crc32);
    jw_kcstr(&j, "crc32", crc);
    jw_kcstr(&j, "file", file);
    jw_kint(&j, "format_version", art->version);
    jw_key(&j, "functions");
    jw_open(&j, '[');
    for (i = 0; i < root->num_functions; i++) jw_function(&j, &root->functions[i]);
    jw_close(&j, ']');
    jw_kv_map(&j, "metadata", art->meta, art->num_meta);
    jw_key(&j, "modules");
    jw_open(&j, '[');
    for (i = 0; i < art->num_modules; i++) jw_module(&j, art, i);
    jw_close(&j, ']');
    jw_kint(&j, "size", art->size);
    jw_kbool(&j, "sources_embedded", art->has_sources);
    jw_str_list(&j, "targets", root->targets, root->num_targets);
    jw_close(&j, '}');
    fputc('\n', out);
}

/* ------------------------------------------------------------- --source FMT (cli._print_source) */

/* print(escape_source(text).rstrip("\n")) */
static void rstrip_nl_write(FILE *out, const char *s, size_t n) {
    while (n && s[n - 1] == '\n') n--;
    pk_write_escaped(out, s, n, 1);
    fputc('\n', out);
}

static int all_shaders_text(const pk_module *m) {
    size_t k;
    for (k = 0; k < m->num_shaders; k++)
        if (!pk_payload_is_text(m->shaders[k].data, m->shaders[k].size)) return 0;
    return 1;
}

static int str_is(const pk_str *s, const char *c) { return s->len == strlen(c) && memcmp(s->ptr, c, s->len) == 0; }

static void module_header(FILE *out, size_t i, const pk_module *m, const char *fmt) {
    fprintf(out, "// ===== module [%zu] %s: ", i, m->kind.ptr);
    pk_write_escaped(out, fmt, strlen(fmt), 0);
    fprintf(out, " =====\n");
}

/* What module i shows for --source fmt: 1 its embedded source `fmt`, 2 its payload (fmt is its own fmt
 * and the payload is text), -1 a note (fmt is its own fmt but the payload is binary), 0 nothing. */
static int source_kind(const pk_module *m, size_t i, const char *fmt) {
    if (pk_kv_find(m->sources, m->num_sources, fmt)) return 1;
    if (!i || !str_is(&m->fmt, fmt)) return 0;
    if (m->layout == PK_LAYOUT_BYTES) return pk_payload_is_text(m->payload, m->payload_size) ? 2 : -1;
    return m->num_shaders && all_shaders_text(m) ? 2 : -1;
}

/* "module [i] kind: fmt 'F' is binary (what); no 'F' source is embedded" (cli._print_source) */
static void write_note(FILE *f, size_t i, const pk_module *m, const char *fmt) {
    char what[160];
    size_t fl = strlen(fmt);
    if (m->layout == PK_LAYOUT_BYTES)
        pk_describe_binary(m->payload, m->payload_size, what, sizeof what);
    else
        snprintf(what, sizeof what, "%zu binary shaders", m->num_shaders);
    fprintf(f, "module [%zu] %s: fmt '", i, m->kind.ptr);
    pk_write_escaped(f, fmt, fl, 0);
    fprintf(f, "' is binary (%s); no '", what);
    pk_write_escaped(f, fmt, fl, 0);
    fprintf(f, "' source is embedded");
}

static int cmp_str_ptr(const void *a, const void *b) {
    return pk_str_cmp(*(const pk_str *const *)a, *(const pk_str *const *)b);
}

/* Every module's text for fmt, then the notes; or the error with every note and every available
 * format (no limit on either: the same text as polykern inspect --source). */
int pk_artifact_print_source(const pk_artifact *art, const char *file, const char *fmt, FILE *out,
                             FILE *err_out) {
    size_t i, k, shown = 0, fl = strlen(fmt), na = 0, total = 0;
    const pk_str **avail;
    for (i = 0; i < art->num_modules; i++) shown += source_kind(&art->modules[i], i, fmt) > 0;
    if (shown) {
        for (i = 0; i < art->num_modules; i++) {
            const pk_module *m = &art->modules[i];
            const pk_str *text = pk_kv_find(m->sources, m->num_sources, fmt);
            int how = source_kind(m, i, fmt);
            if (how <= 0) continue;
            module_header(out, i, m, fmt);
            if (how == 1) {
                rstrip_nl_write(out, text->ptr, text->len);
            } else if (m->layout == PK_LAYOUT_BYTES) {
                rstrip_nl_write(out, (const char *)m->payload, m->payload_size);
            } else {
                /* "\n".join(f"// ---- {escape(n)} ----\n{escape_source(text)}") then rstrip("\n") */
                for (k = 0; k < m->num_shaders; k++) {
                    fprintf(out, "%s// ---- ", k ? "\n" : "");
                    pk_write_escaped(out, m->shaders[k].name.ptr, m->shaders[k].name.len, 0);
                    fprintf(out, " ----\n");
                    if (k + 1 < m->num_shaders)
                        pk_write_escaped(out, (const char *)m->shaders[k].data, m->shaders[k].size, 1);
                    else
                        rstrip_nl_write(out, (const char *)m->shaders[k].data, m->shaders[k].size);
                }
            }
        }
        for (i = 0; i < art->num_modules; i++)
            if (source_kind(&art->modules[i], i, fmt) < 0) {
                fprintf(err_out, "kbin-inspect: note: ");
                write_note(err_out, i, &art->modules[i], fmt);
                fputc('\n', err_out);
            }
        return 0;
    }
    fprintf(err_out, "kbin-inspect: error: no module of ");
    pk_write_escaped(err_out, file, strlen(file), 0);
    fprintf(err_out, " has a '");
    pk_write_escaped(err_out, fmt, fl, 0);
    fprintf(err_out, "' source");
    for (i = 0; i < art->num_modules; i++)
        if (source_kind(&art->modules[i], i, fmt) < 0) {
            fprintf(err_out, "; ");
            write_note(err_out, i, &art->modules[i], fmt);
        }
    /* available formats: every source key plus text fmts, sorted unique */
    for (i = 0; i < art->num_modules; i++) total += art->modules[i].num_sources + 1;
    avail = (const pk_str **)malloc(total * sizeof *avail);
    if (!avail) {
        fprintf(err_out, "; out of memory\n");
        return 1;
    }
    for (i = 0; i < art->num_modules; i++) {
        const pk_module *m = &art->modules[i];
        for (k = 0; k < m->num_sources; k++) avail[na++] = &m->sources[k].key;
        if (i && m->fmt.len &&
            ((m->layout == PK_LAYOUT_BYTES && pk_payload_is_text(m->payload, m->payload_size)) ||
             (m->layout != PK_LAYOUT_BYTES && m->num_shaders && all_shaders_text(m))))
            avail[na++] = &m->fmt;
    }
    qsort(avail, na, sizeof *avail, cmp_str_ptr);
    if (na) {
        fprintf(err_out, "; available: ");
        for (i = 0; i < na; i++) {
            if (i && pk_str_cmp(avail[i - 1], avail[i]) == 0) continue;
            if (i) fprintf(err_out, ", ");
            pk_write_escaped(err_out, avail[i]->ptr, avail[i]->len, 0);
        }
    } else {
        fprintf(err_out, "%s", art->has_sources ? "; none embedded" : "; the artifact was built with --strip-sources");
    }
    free(avail);
    fputc('\n', err_out);
    return 1;
}
