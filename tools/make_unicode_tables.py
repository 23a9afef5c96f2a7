#!/usr/bin/env python3
"""Writes src/text/unicode_tables.h: what PCRE2 must add to its Unicode classes
to match the Oniguruma that HF `tokenizers` uses for its regexes.

HF `tokenizers` compiles every Split pattern with Oniguruma (Unicode 16 in
tokenizers 0.23); Debian 12's PCRE2 10.42 knows Unicode 14. A letter added
in Unicode 15 or 16 is `\\p{L}` to HF and unassigned to PCRE2, so text that
contains one would split differently. For each property name the tokenizer
rewrites (general categories, a few scripts, `\\s`, `\\d`, `\\w`) this script
asks both engines for the full set of code points (HF through a Split
pre-tokenizer, PCRE2 through ctypes), and records Oniguruma minus PCRE2 as
ranges. A property where PCRE2 has code points Oniguruma lacks cannot be
fixed by adding ranges; it is left out (PCRE2's own semantics apply) and
reported.

Run with the oracle's virtualenv (never by CI):
    .venv/bin/python tools/make_unicode_tables.py
"""
import ctypes
import os
import sys

from tokenizers import Regex, pre_tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "text", "unicode_tables.h")

CPS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
SUBJECT = "".join(map(chr, CPS))
SUBJECT_UTF8 = SUBJECT.encode("utf-8")
# byte offset of each code point in SUBJECT_UTF8 -> index in CPS
_byte_to_idx = {}
_off = 0
for _i, _c in enumerate(CPS):
    _byte_to_idx[_off] = _i
    _off += len(chr(_c).encode("utf-8"))
_byte_to_idx[_off] = len(CPS)

# General categories (short name first, then aliases), scripts, binary properties.
GC = [
    ("L", "Letter"), ("Lu", "Uppercase_Letter"), ("Ll", "Lowercase_Letter"),
    ("Lt", "Titlecase_Letter"), ("Lm", "Modifier_Letter"), ("Lo", "Other_Letter"),
    ("M", "Mark", "Combining_Mark"), ("Mn", "Nonspacing_Mark"), ("Mc", "Spacing_Mark"),
    ("Me", "Enclosing_Mark"), ("N", "Number"), ("Nd", "Decimal_Number", "digit"),
    ("Nl", "Letter_Number"), ("No", "Other_Number"), ("P", "Punctuation", "punct"),
    ("Pc", "Connector_Punctuation"), ("Pd", "Dash_Punctuation"), ("Ps", "Open_Punctuation"),
    ("Pe", "Close_Punctuation"), ("Pi", "Initial_Punctuation"), ("Pf", "Final_Punctuation"),
    ("Po", "Other_Punctuation"), ("S", "Symbol"), ("Sm", "Math_Symbol"),
    ("Sc", "Currency_Symbol"), ("Sk", "Modifier_Symbol"), ("So", "Other_Symbol"),
    ("Z", "Separator"), ("Zs", "Space_Separator"), ("Zl", "Line_Separator"),
    ("Zp", "Paragraph_Separator"), ("Cc", "Control"), ("Cf", "Format"),
    ("Co", "Private_Use"),
]
SCRIPTS = ["Han", "Hiragana", "Katakana", "Hangul", "Latin", "Greek", "Cyrillic", "Arabic",
           "Hebrew", "Thai", "Devanagari", "Armenian", "Georgian", "Bengali", "Tamil"]
BINARY = [("Alphabetic", "Alpha")]


def hf_set(pattern):
    """Code points Oniguruma (through HF) matches with `pattern`."""
    sp = pre_tokenizers.Split(Regex(pattern), "removed")
    covered = bytearray(len(CPS))
    for _, (a, b) in sp.pre_tokenize_str(SUBJECT):
        covered[a:b] = b"\x01" * (b - a)
    return {CPS[i] for i in range(len(CPS)) if not covered[i]}


class Pcre2:
    UTF, UCP = 0x00080000, 0x00020000

    def __init__(self):
        self.lib = ctypes.CDLL("libpcre2-8.so.0")
        self.lib.pcre2_compile_8.restype = ctypes.c_void_p
        self.lib.pcre2_compile_8.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
                                             ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
        self.lib.pcre2_match_data_create_8.restype = ctypes.c_void_p
        self.lib.pcre2_match_data_create_8.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
        self.lib.pcre2_get_ovector_pointer_8.restype = ctypes.POINTER(ctypes.c_size_t)
        self.lib.pcre2_get_ovector_pointer_8.argtypes = [ctypes.c_void_p]
        self.lib.pcre2_match_8.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                           ctypes.c_size_t, ctypes.c_uint32, ctypes.c_void_p,
                                           ctypes.c_void_p]
        buf = ctypes.create_string_buffer(64)
        self.lib.pcre2_config_8(10, buf)  # PCRE2_CONFIG_UNICODE_VERSION
        self.unicode = buf.value.decode()

    def set(self, pattern):
        """Code points PCRE2 (UTF|UCP) matches with `pattern` (a one-character class)."""
        err, eoff = ctypes.c_int(), ctypes.c_size_t()
        pat = ("(?:" + pattern + ")+").encode()
        code = self.lib.pcre2_compile_8(pat, len(pat), self.UTF | self.UCP, ctypes.byref(err),
                                        ctypes.byref(eoff), None)
        if not code:
            return None
        md = self.lib.pcre2_match_data_create_8(1, None)
        out, pos = set(), 0
        while True:
            rc = self.lib.pcre2_match_8(code, SUBJECT_UTF8, len(SUBJECT_UTF8), pos, 0, md, None)
            if rc < 0:
                break
            ov = self.lib.pcre2_get_ovector_pointer_8(md)
            a, b = ov[0], ov[1]
            for i in range(_byte_to_idx[a], _byte_to_idx[b]):
                out.add(CPS[i])
            pos = b
        return out


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def class_text(rs):
    parts = []
    for a, b in rs:
        parts.append("\\\\x{%x}" % a if a == b else "\\\\x{%x}-\\\\x{%x}" % (a, b))
    return "".join(parts)


def main():
    pcre = Pcre2()
    rows, notes = [], []

    def add(names, onig_pat, pcre_expr):
        o = hf_set(onig_pat)
        p = pcre.set("[" + pcre_expr + "]")
        if p is None:
            notes.append("%s: PCRE2 does not know %s" % (names[0], pcre_expr))
            return
        if p - o:
            notes.append("%s: PCRE2 has %d code points Oniguruma lacks; left to PCRE2"
                         % (names[0], len(p - o)))
            return
        rows.append((names, pcre_expr, ranges(o - p), len(o)))

    for names in GC:
        add(names, "\\p{%s}" % names[0], "\\p{%s}" % names[0])
    # PCRE2's \p{Han} means Script_Extensions; Oniguruma's means Script (sc:).
    for s in SCRIPTS:
        add((s,), "\\p{%s}" % s, "\\p{sc:%s}" % s)
    for names in BINARY:
        add(names, "\\p{%s}" % names[0], "\\p{%s}" % names[0])

    space = hf_set("\\s")
    word = hf_set("\\w")
    word_expr = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}"
    wp = pcre.set("[" + word_expr + "]")
    assert not (wp - word), "PCRE2 word expression too wide: %d" % len(wp - word)
    digit = hf_set("\\d")
    dp = pcre.set("[\\p{Nd}]")
    assert not (dp - digit)

    with open(OUT, "w") as f:
        f.write("/*\n * unicode_tables.h - generated by tools/make_unicode_tables.py; do not edit.\n"
                " *\n * Oniguruma's Unicode classes (HF tokenizers) as PCRE2 class contents: for each\n"
                " * property, the PCRE2 property plus the code points PCRE2 (Unicode %s) lacks.\n"
                " * Every string is valid inside a PCRE2 character class.\n */\n" % pcre.unicode)
        f.write("#ifndef DSV4_TEXT_UNICODE_TABLES_H\n#define DSV4_TEXT_UNICODE_TABLES_H\n\n")
        f.write("#define TEXT_PCRE2_UNICODE \"%s\"\n\n" % pcre.unicode)
        f.write("/* \\s: Unicode White_Space (PCRE2's \\s also takes U+180E). */\n")
        f.write("#define TEXT_CLASS_SPACE \"%s\"\n" % class_text(ranges(space)))
        f.write("/* \\d: Nd. */\n#define TEXT_CLASS_DIGIT \"\\\\p{Nd}%s\"\n"
                % class_text(ranges(digit - dp)))
        f.write("/* \\w: Alphabetic, marks, Nd, Pc. */\n#define TEXT_CLASS_WORD \"%s%s\"\n\n"
                % (word_expr.replace("\\", "\\\\"), class_text(ranges(word - wp))))
        f.write("typedef struct {\n    const char *names; /* '|'-separated, lower case, no '_' */\n"
                "    const char *cls;   /* PCRE2 class contents */\n    int n_onig;        /* code points in Oniguruma's set (tests) */\n} text_uprop;\n\n")
        f.write("static const text_uprop TEXT_UPROPS[] = {\n")
        for names, expr, rs, n in rows:
            key = "|".join(x.lower().replace("_", "") for x in names)
            f.write("    {\"%s\", \"%s%s\", %d},\n" % (key, expr.replace("\\", "\\\\"), class_text(rs), n))
        f.write("};\n\n")
        f.write("/* Counts for tests: Oniguruma's \\s, \\d, \\w. */\n")
        f.write("#define TEXT_N_SPACE %d\n#define TEXT_N_DIGIT %d\n#define TEXT_N_WORD %d\n\n"
                % (len(space), len(digit), len(word)))
        f.write("#endif\n")
    for n in notes:
        print("note:", n, file=sys.stderr)
    print("wrote %s (%d properties, PCRE2 Unicode %s)" % (OUT, len(rows), pcre.unicode))


if __name__ == "__main__":
    main()
