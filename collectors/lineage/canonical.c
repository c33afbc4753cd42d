/* RFC 8785 number spellings in orjson's compact, key-sorted JSON (collectors/lineage/events.py).
 *
 * orjson writes what RFC 8785 asks except for floats: an integral float is "1.0" where
 * ECMAScript writes "1" ("-0.0": "0"), and outside [1e-4, 1e16) the two switch to exponents at
 * different points. annex_canonical_numbers respells the integral floats in one pass and tells
 * the caller where it must take a slower path: a number with an exponent (the caller writes the
 * value again), a character outside the Basic Multilingual Plane (keys sort by UTF-16 code
 * units there). It follows the same rule as events.py's Python path, which runs where no C
 * compiler built this; a bare number (the whole text) is left as written, as that path does.
 *
 * The text is orjson's, so it is valid JSON with no whitespace: strings are passed over 8 bytes
 * at a time up to their next quote, backslash or non-ASCII byte, and only the bytes between
 * strings (structure, literals, numbers) are looked at one by one. About 2 µs for the 5.5 KB of
 * a typical event, against 13-16 µs for the regular expressions of the Python path.
 *
 * Called through ctypes (collectors/lineage/events.py), which releases the GIL around it.
 */
#include <stdint.h>
#include <string.h>

#define CANONICAL_EXPONENT (-1) /* a number with an exponent: write the value again */
#define CANONICAL_ASTRAL (-2)   /* a character beyond U+FFFF: the reference walk */
#define CANONICAL_NOT_JSON (-3) /* a string left open: not orjson's text */

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The position (0-7) of the first of 8 bytes that is '"', '\\' or not ASCII; 8 if none (the
 * classic "has a zero byte" word test: its lowest flagged byte is exact). */
static inline int string_stop(const char *p) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t found = (((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | x) & highs;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return found ? __builtin_ctzll(found) >> 3 : 8;
#else
    return found ? __builtin_clzll(found) >> 3 : 8;
#endif
}

/* ``in`` (``length`` bytes of orjson's text) with its integral floats respelled, written to
 * ``out`` (room for ``length`` bytes: it only shortens); the length written, or one of the
 * codes above. */
int64_t annex_canonical_numbers(const char *in, int64_t length, char *out) {
    const char *p = in, *end = in + length, *copied = in;
    char *w = out;
    int astral = 0;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') { /* a string: to its closing quote */
            p++;
            for (;;) {
                while (end - p >= 8) {
                    int k = string_stop(p);
                    p += k;
                    if (k < 8) break;
                }
                while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p < 0x80) p++;
                if (p >= end) return CANONICAL_NOT_JSON;
                c = (unsigned char)*p;
                if (c == '"') {
                    p++;
                    break;
                }
                if (c == '\\') { /* the escaped character (a quote too) is passed with it */
                    p += 2;
                    continue;
                }
                astral |= c >= 0xF0; /* the lead byte of a 4-byte UTF-8 sequence */
                p++;
            }
            continue;
        }
        if (c != '-' && !is_digit(c)) { /* structure and literals */
            p++;
            continue;
        }
        /* a number: -?digits(.digits)?([eE][+-]?digits)? */
        const char *start = p;
        if (c == '-') p++;
        while (p < end && is_digit((unsigned char)*p)) p++;
        const char *dot = p;
        if (p < end && *p == '.') {
            p++;
            while (p < end && is_digit((unsigned char)*p)) p++;
        }
        if (start == in) continue; /* a bare number: left as written */
        if (p < end && (*p == 'e' || *p == 'E')) return CANONICAL_EXPONENT;
        if (p - dot != 2 || dot[1] != '0') continue; /* an integer, or a fraction kept */
        memcpy(w, copied, (size_t)(start - copied));
        w += start - copied;
        if (dot - start == 2 && start[0] == '-' && start[1] == '0') {
            *w++ = '0'; /* -0.0 */
        } else {
            memcpy(w, start, (size_t)(dot - start));
            w += dot - start;
        }
        copied = p;
    }
    if (astral) return CANONICAL_ASTRAL;
    memcpy(w, copied, (size_t)(end - copied));
    w += end - copied;
    return w - out;
}
