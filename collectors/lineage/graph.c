/* The lineage graph of OpenLineage events, read from their JSON text without decoding it.
 *
 * For each event (one JSON text of an Arrow string column) this finds what the warehouse's
 * merge needs: every dataset item (inputs, outputs, a dataset event's dataset) with its
 * namespace, name and version facet's datasetVersion, and every facet (run, job, a dataset's
 * facets, an input's inputFacets, an output's outputFacets) with its place, name and the span
 * of its value in the text, in characters (code points, as SQL's substring() counts them). The warehouse then ranks facets by these narrow keys and
 * slices only the latest ones out of the payload, instead of parsing every payload into maps.
 *
 * The whole text is checked as JSON (RFC 8259: literals, numbers, strings with their escapes,
 * surrogate pairs and UTF-8, no raw control character; whitespace anywhere between tokens). An
 * event is left to the warehouse's own parse (scanned[i] = 0, nothing emitted for it) when it
 * is not JSON, or where this reading might differ from that parse:
 *   - a key with an escape in an object this reads (it may spell one of its keys), or an escape
 *     in a namespace, name or datasetVersion;
 *   - a key this reads twice in one object, or a facet name twice in one place;
 *   - a place of an unexpected type: run, job, an item or facets not an object, inputs or
 *     outputs not an array, a namespace, name or datasetVersion neither a string nor null, a
 *     version facet not an object;
 *   - more than MAX_FACETS facets in one place, or nesting deeper than MAX_DEPTH.
 * The intake's canonical texts have none of these. A span keeps the value's text as sent
 * (whitespace, number spellings, escapes): the warehouse writes it through json().
 *
 * Called through ctypes (collectors/lineage/graph.py), which releases the GIL around it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 1000

enum place { RUN = 0, JOB = 1, DATASET_FACETS = 2, INPUT_FACETS = 3, OUTPUT_FACETS = 4 };
enum direction { INPUT = 0, OUTPUT = 1, DATASET = 2 };

typedef struct {
    int32_t *values;
    int64_t count, capacity;
} Ints;

typedef struct { /* an Arrow string column: offsets (count + 1), bytes, one validity byte a row */
    int32_t *offsets;
    uint8_t *valid;
    int64_t count, offsets_capacity, valid_capacity;
    char *bytes;
    int64_t size, room;
} Strings;

typedef struct {
    /* facets */
    Ints facet_event, facet_place, facet_item, facet_start, facet_length;
    Strings facet_name;
    Ints facet_direction; /* internal: the list of the facet's item, for its number */
    /* dataset items */
    Ints item_event, item_direction, item_index;
    Strings item_namespace, item_name, item_version;
    /* 1 where the event was read, 0 where it is left to the warehouse */
    uint8_t *scanned;
    int out_of_memory;
} Graph;

/* --- output -------------------------------------------------------------------------------- */

static int grow(void **buffer, int64_t *capacity, int64_t needed, size_t size) {
    if (needed <= *capacity) return 1;
    int64_t wanted = *capacity ? *capacity * 2 : 4096;
    while (wanted < needed) wanted *= 2;
    void *moved = realloc(*buffer, (size_t)wanted * size);
    if (!moved) return 0;
    *buffer = moved;
    *capacity = wanted;
    return 1;
}

static int push(Graph *g, Ints *ints, int32_t value) {
    if (!grow((void **)&ints->values, &ints->capacity, ints->count + 1, sizeof(int32_t))) {
        g->out_of_memory = 1;
        return 0;
    }
    ints->values[ints->count++] = value;
    return 1;
}

/* text == NULL: a null value */
static int push_text(Graph *g, Strings *s, const char *text, int64_t length) {
    if (!grow((void **)&s->offsets, &s->offsets_capacity, s->count + 2, sizeof(int32_t)) ||
        !grow((void **)&s->valid, &s->valid_capacity, s->count + 1, 1) ||
        !grow((void **)&s->bytes, &s->room, s->size + length + 1, 1) || s->size + length > INT32_MAX) {
        g->out_of_memory = 1;
        return 0;
    }
    if (s->count == 0) s->offsets[0] = 0;
    if (text) memcpy(s->bytes + s->size, text, (size_t)length);
    s->size += text ? length : 0;
    s->valid[s->count] = text != NULL;
    s->offsets[++s->count] = (int32_t)s->size;
    return 1;
}

/* --- reading --------------------------------------------------------------------------------- */

typedef struct {
    const char *start, *at, *end;
    int refused; /* not JSON, or not read here: the warehouse parses the event */
    int64_t wide; /* bytes past the first of each UTF-8 sequence so far: offsets in characters */
} Text;

static inline int refuse(Text *t) {
    t->refused = 1;
    return 0;
}

static inline int raw(const Text *t) { return t->at < t->end ? (unsigned char)*t->at : -1; }

/* The next token's first byte, after any whitespace (the intake's texts have none). */
static inline int peek(Text *t) {
    if (t->at < t->end && (unsigned char)*t->at > ' ') return (unsigned char)*t->at;
    while (t->at < t->end && (*t->at == ' ' || *t->at == '\n' || *t->at == '\r' || *t->at == '\t'))
        t->at++;
    return raw(t);
}

static inline int expect(Text *t, char c) {
    if (peek(t) != (unsigned char)c) return refuse(t);
    t->at++;
    return 1;
}

static int hex4(const char *p) {
    int code = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char h = (unsigned char)p[k];
        int digit = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
        if (digit < 0) return -1;
        code = code * 16 + digit;
    }
    return code;
}

/* The length of the UTF-8 sequence at p (lead byte >= 0x80), 0 if it is not valid UTF-8
 * (overlong, a surrogate, beyond U+10FFFF, cut short). */
static int utf8_sequence(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    int length = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!length || end - p < length) return 0;
    for (int k = 1; k < length; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
    if (c == 0xED && p[1] > 0x9F) return 0; /* a surrogate */
    if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && p[1] > 0x8F) return 0; /* beyond U+10FFFF */
    return length;
}

/* A string at the next token ('"'); its content's bounds, and whether it holds a backslash.
 * Checked as a JSON parser checks it: no raw control character, valid escapes (a surrogate
 * only as a pair), valid UTF-8. */
/* Whether 8 bytes hold one a string's scan must stop at: '"', '\\', a control character or a
 * non-ASCII byte (the classic "has a zero byte" / "has a byte less than n" word tests). */
static inline int special8(const char *p) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t control = (x - ones * 0x20) & ~x;
    uint64_t zero_quote = (quote - ones) & ~quote, zero_backslash = (backslash - ones) & ~backslash;
    return ((control | zero_quote | zero_backslash | x) & highs) != 0;
}

/* The same test, a byte at a time (GNU C's range designators: gcc and clang). */
static const unsigned char STOPS[256] = {
    [0x00 ... 0x1F] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xFF] = 1,
};

static int string(Text *t, const char **content, int64_t *length, int *escaped) {
    if (peek(t) != '"') return refuse(t);
    const char *p = ++t->at;
    int backslash = 0;
    while (p < t->end) {
        while (t->end - p >= 8 && !special8(p)) p += 8; /* the plain run, 8 bytes at a time */
        while (p < t->end && !STOPS[(unsigned char)*p]) p++;
        if (p >= t->end) break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (content) *content = t->at;
            if (length) *length = p - t->at;
            if (escaped) *escaped = backslash;
            t->at = p + 1;
            return 1;
        }
        if (c < 0x20) return refuse(t);
        if (c >= 0x80) {
            int n = utf8_sequence((const unsigned char *)p, (const unsigned char *)t->end);
            if (!n) return refuse(t);
            p += n;
            t->wide += n - 1;
            continue;
        }
        if (c == '\\') {
            backslash = 1;
            if (++p >= t->end) return refuse(t);
            c = (unsigned char)*p;
            if (c == 'u') {
                int code = t->end - p >= 5 ? hex4(p + 1) : -1;
                if (code < 0 || (code >= 0xDC00 && code <= 0xDFFF)) return refuse(t);
                p += 4;
                if (code >= 0xD800 && code <= 0xDBFF) { /* a high surrogate: its low one next */
                    int low = t->end - p >= 7 && p[1] == '\\' && p[2] == 'u' ? hex4(p + 3) : -1;
                    if (low < 0xDC00 || low > 0xDFFF) return refuse(t);
                    p += 6;
                }
            } else if (c == 0 || !strchr("\"\\/bfnrt", c)) {
                return refuse(t);
            }
        }
        p++;
    }
    return refuse(t);
}

static int digits(Text *t) {
    const char *from = t->at;
    while (t->at < t->end && *t->at >= '0' && *t->at <= '9') t->at++;
    return t->at > from ? 1 : refuse(t);
}

/* A number at the next token, read byte by byte (no whitespace within it). */
static int number(Text *t) {
    peek(t);
    if (raw(t) == '-') t->at++;
    if (raw(t) == '0') {
        t->at++;
    } else if (raw(t) >= '1' && raw(t) <= '9') {
        digits(t);
    } else {
        return refuse(t);
    }
    if (raw(t) == '.') {
        t->at++;
        if (!digits(t)) return 0;
    }
    if (raw(t) == 'e' || raw(t) == 'E') {
        t->at++;
        if (raw(t) == '+' || raw(t) == '-') t->at++;
        if (!digits(t)) return 0;
    }
    return 1;
}

static int literal(Text *t, const char *word, size_t length) {
    if ((size_t)(t->end - t->at) < length || memcmp(t->at, word, length) != 0) return refuse(t);
    t->at += length;
    return 1;
}

/* Any JSON value, checked and passed over (iteratively: a deep value cannot exhaust C's
 * stack). */
static int value(Text *t) {
    char open[MAX_DEPTH]; /* '{' or '[' of each open container */
    int depth = 0;
    for (;;) {
        /* a value */
        int c = peek(t);
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) return refuse(t);
            open[depth++] = (char)c;
            t->at++;
            if (peek(t) == (c == '{' ? '}' : ']')) {
                t->at++;
                depth--;
            } else {
                if (c == '{' && !(string(t, NULL, NULL, NULL) && expect(t, ':'))) return 0;
                continue;
            }
        } else if (c == '"') {
            if (!string(t, NULL, NULL, NULL)) return 0;
        } else if (c == 't') {
            if (!literal(t, "true", 4)) return 0;
        } else if (c == 'f') {
            if (!literal(t, "false", 5)) return 0;
        } else if (c == 'n') {
            if (!literal(t, "null", 4)) return 0;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (!number(t)) return 0;
        } else {
            return refuse(t);
        }
        /* after a value: the next member or element, or the end of containers */
        for (;;) {
            if (depth == 0) return 1;
            char kind = open[depth - 1];
            c = peek(t);
            if (c == ',') {
                t->at++;
                if (kind == '{' && !(string(t, NULL, NULL, NULL) && expect(t, ':'))) return 0;
                break;
            }
            if (c != (kind == '{' ? '}' : ']')) return refuse(t);
            t->at++;
            depth--;
        }
    }
}

/* An object's members, one at a time; a key with an escape is refused (it may spell one
 * read here: the event is left to the warehouse). Use:
 *     Member m = {0};
 *     if (!object(t)) return 0;
 *     while (member(t, &m)) { ...m.key, m.length...; read or pass over the value }
 *     return !t->refused;
 * ``member`` returns 0 at the end of the object, and with t->refused set on an error. */
typedef struct {
    int started;
    const char *key;
    int64_t length;
    unsigned seen; /* a bit per key read here: each may appear once (``once``) */
} Member;

static int object(Text *t) {
    if (peek(t) != '{') return refuse(t);
    t->at++;
    return 1;
}

static int member(Text *t, Member *m) {
    if (peek(t) == '}') {
        t->at++;
        return 0;
    }
    if (m->started && !expect(t, ',')) return 0;
    m->started = 1;
    int escaped;
    if (!string(t, &m->key, &m->length, &escaped) || !expect(t, ':')) return 0;
    return escaped ? refuse(t) : 1;
}

static inline int is(const char *key, int64_t length, const char *word) {
    return (size_t)length == strlen(word) && memcmp(key, word, (size_t)length) == 0;
}

/* Keys this reads may appear once in their object (a bit per key). */
static inline int once(Text *t, Member *m, unsigned bit) {
    if (m->seen & bit) return refuse(t);
    m->seen |= bit;
    return 1;
}

typedef struct {
    Graph *g;
    int32_t event;
    int64_t first_facet; /* this event's first rows, to number its items at its end */
    int64_t first_item;
    int32_t inputs, outputs;
} Event;

#define MAX_FACETS 256 /* in one place; more: the warehouse's parse (checking repeats is O(n^2)) */

/* A string or null this reads (namespace, name, datasetVersion): NULL content for null. */
static int text_or_null(Text *t, const char **content, int64_t *length) {
    if (peek(t) == 'n') {
        *content = NULL;
        *length = 0;
        return literal(t, "null", 4);
    }
    int escaped;
    if (!string(t, content, length, &escaped)) return 0;
    return escaped ? refuse(t) : 1;
}

/* The version facet's datasetVersion (the facet's span, already checked as JSON). */
static int dataset_version(Text *facet, const char **version, int64_t *length) {
    Member m = {0};
    if (!object(facet)) return 0;
    while (member(facet, &m)) {
        if (is(m.key, m.length, "datasetVersion")) {
            if (!once(facet, &m, 1) || !text_or_null(facet, version, length)) return 0;
        } else if (!value(facet)) {
            return 0;
        }
    }
    return !facet->refused;
}

/* A facets object: each facet's name and the span of its value, in characters (the
 * warehouse's substring() counts code points). ``version``: where a dataset's version facet
 * gives its datasetVersion (NULL: not looked for). */
static int facets(Text *t, Event *e, int32_t place, int32_t direction, int32_t index,
                  const char **version, int64_t *version_length) {
    Graph *g = e->g;
    int64_t from = g->facet_event.count;
    Member m = {0};
    if (!object(t)) return 0;
    while (member(t, &m)) {
        if (g->facet_event.count - from >= MAX_FACETS) return refuse(t);
        const Strings *names = &g->facet_name;
        for (int64_t row = from; row < names->count; row++) {
            int32_t a = names->offsets[row];
            if (names->offsets[row + 1] - a == m.length &&
                memcmp(names->bytes + a, m.key, (size_t)m.length) == 0)
                return refuse(t); /* a facet named twice in one place */
        }
        peek(t);
        const char *at = t->at;
        int64_t wide = t->wide;
        if (!value(t)) return 0;
        if (version && is(m.key, m.length, "version")) {
            Text facet = {t->start, at, t->at, 0, 0};
            if (!dataset_version(&facet, version, version_length)) return refuse(t);
        }
        if (!(push(g, &g->facet_event, e->event) && push(g, &g->facet_place, place) &&
              push(g, &g->facet_item, index) && push(g, &g->facet_direction, direction) &&
              push(g, &g->facet_start, (int32_t)(at - t->start - wide)) &&
              push(g, &g->facet_length, (int32_t)(t->at - at - (t->wide - wide))) &&
              push_text(g, &g->facet_name, m.key, m.length)))
            return refuse(t);
    }
    return !t->refused;
}

/* A dataset item: an input, an output or a dataset event's dataset. */
static int item(Text *t, Event *e, int32_t direction, int32_t index) {
    Graph *g = e->g;
    const char *namespace_ = NULL, *name = NULL, *version = NULL;
    int64_t namespace_length = 0, name_length = 0, version_length = 0;
    const char *io = direction == INPUT ? "inputFacets" : "outputFacets";
    Member m = {0};
    if (!object(t)) return 0;
    while (member(t, &m)) {
        if (is(m.key, m.length, "namespace")) {
            if (!once(t, &m, 1) || !text_or_null(t, &namespace_, &namespace_length)) return 0;
        } else if (is(m.key, m.length, "name")) {
            if (!once(t, &m, 2) || !text_or_null(t, &name, &name_length)) return 0;
        } else if (is(m.key, m.length, "facets")) {
            if (!once(t, &m, 4) ||
                !facets(t, e, DATASET_FACETS, direction, index, &version, &version_length))
                return 0;
        } else if (direction != DATASET && is(m.key, m.length, io)) {
            int32_t place = direction == INPUT ? INPUT_FACETS : OUTPUT_FACETS;
            if (!once(t, &m, 8) || !facets(t, e, place, direction, index, NULL, NULL)) return 0;
        } else if (!value(t)) {
            return 0;
        }
    }
    if (t->refused) return 0;
    if (!(push(g, &g->item_event, e->event) && push(g, &g->item_direction, direction) &&
          push(g, &g->item_index, index) &&
          push_text(g, &g->item_namespace, namespace_, namespace_length) &&
          push_text(g, &g->item_name, name, name_length) &&
          push_text(g, &g->item_version, version, version_length)))
        return refuse(t);
    return 1;
}

static int items(Text *t, Event *e, int32_t direction, int32_t *count) {
    if (!expect(t, '[')) return 0;
    if (peek(t) == ']') {
        t->at++;
        return 1;
    }
    for (;;) {
        if (!item(t, e, direction, (*count)++)) return 0;
        if (peek(t) != ',') return expect(t, ']');
        t->at++;
    }
}

/* run or job: their facets. */
static int holder(Text *t, Event *e, int32_t place) {
    Member m = {0};
    if (!object(t)) return 0;
    while (member(t, &m)) {
        if (is(m.key, m.length, "facets")) {
            if (!once(t, &m, 1) || !facets(t, e, place, -1, -1, NULL, NULL)) return 0;
        } else if (!value(t)) {
            return 0;
        }
    }
    return !t->refused;
}

static int event(Text *t, Event *e) {
    Member m = {0};
    if (!object(t)) return 0;
    while (member(t, &m)) {
        if (is(m.key, m.length, "run")) {
            if (!once(t, &m, 1) || !holder(t, e, RUN)) return 0;
        } else if (is(m.key, m.length, "job")) {
            if (!once(t, &m, 2) || !holder(t, e, JOB)) return 0;
        } else if (is(m.key, m.length, "inputs")) {
            if (!once(t, &m, 4) || !items(t, e, INPUT, &e->inputs)) return 0;
        } else if (is(m.key, m.length, "outputs")) {
            if (!once(t, &m, 8) || !items(t, e, OUTPUT, &e->outputs)) return 0;
        } else if (is(m.key, m.length, "dataset")) {
            if (!once(t, &m, 16) || !item(t, e, DATASET, 0)) return 0;
        } else if (!value(t)) {
            return 0;
        }
    }
    peek(t);
    return !t->refused && t->at == t->end ? 1 : refuse(t);
}

static void truncate_to(Graph *g, int64_t facet_rows, int64_t item_rows) {
    Ints *facet_ints[] = {&g->facet_event, &g->facet_place,  &g->facet_item,
                          &g->facet_start, &g->facet_length, &g->facet_direction};
    for (size_t k = 0; k < sizeof facet_ints / sizeof *facet_ints; k++)
        facet_ints[k]->count = facet_rows;
    Ints *item_ints[] = {&g->item_event, &g->item_direction, &g->item_index};
    for (size_t k = 0; k < sizeof item_ints / sizeof *item_ints; k++) item_ints[k]->count = item_rows;
    Strings *strings[] = {&g->facet_name, &g->item_namespace, &g->item_name, &g->item_version};
    for (size_t k = 0; k < sizeof strings / sizeof *strings; k++) {
        Strings *s = strings[k];
        s->count = k == 0 ? facet_rows : item_rows;
        s->size = s->count ? s->offsets[s->count] : 0;
    }
}

/* Item numbers as the merge numbers them: inputs from 0, then outputs, then the dataset. */
static int32_t item_number(const Event *e, int32_t direction, int32_t index) {
    return direction == OUTPUT ? e->inputs + index
           : direction == DATASET ? e->inputs + e->outputs
                                  : index;
}

static void number_items(Graph *g, const Event *e) {
    for (int64_t row = e->first_item; row < g->item_event.count; row++)
        g->item_index.values[row] =
            item_number(e, g->item_direction.values[row], g->item_index.values[row]);
    for (int64_t row = e->first_facet; row < g->facet_event.count; row++)
        if (g->facet_direction.values[row] >= 0)
            g->facet_item.values[row] =
                item_number(e, g->facet_direction.values[row], g->facet_item.values[row]);
}

int annex_lineage_graph(const char *data, const int32_t *offsets, int64_t events, Graph *g) {
    g->scanned = calloc((size_t)(events ? events : 1), 1);
    if (!g->scanned) {
        g->out_of_memory = 1;
        return 0;
    }
    for (int64_t i = 0; i < events; i++) {
        Text t = {data + offsets[i], data + offsets[i], data + offsets[i + 1], 0, 0};
        Event e = {g, (int32_t)i, g->facet_event.count, g->item_event.count, 0, 0};
        if (event(&t, &e) && !g->out_of_memory) {
            number_items(g, &e);
            g->scanned[i] = 1;
        } else {
            truncate_to(g, e.first_facet, e.first_item);
        }
        if (g->out_of_memory) return 0;
    }
    return 1;
}

void annex_lineage_graph_free(Graph *g) {
    Ints *ints[] = {&g->facet_event,     &g->facet_place,  &g->facet_item,
                    &g->facet_start,     &g->facet_length, &g->facet_direction,
                    &g->item_event,      &g->item_direction, &g->item_index};
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) free(ints[k]->values);
    Strings *strings[] = {&g->facet_name, &g->item_namespace, &g->item_name, &g->item_version};
    for (size_t k = 0; k < sizeof strings / sizeof *strings; k++) {
        free(strings[k]->offsets);
        free(strings[k]->valid);
        free(strings[k]->bytes);
    }
    free(g->scanned);
    memset(g, 0, sizeof *g);
}
