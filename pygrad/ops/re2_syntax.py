"""RE2's syntax (TF's regex ops) read by Python's re: a pattern is translated where both engines
mean the same thing, and refused where re cannot say what RE2 says. Text is matched as str decoded
from UTF-8 with 'surrogateescape'; bytes that are not UTF-8 match nothing, as in RE2.

What changes in translation: RE2's \\d \\w \\s and \\b are ASCII-only (re's are Unicode), its $
outside (?m) is the end of the text (re's $ also matches before a final newline), \\z is re's
\\Z, \\Q...\\E quotes, \\x{hhhh} is a code point, [[:alpha:]] classes are ASCII ranges, {,n} is
literal text (re reads it as {0,n}), and a flag setting (?i) holds to the end of its group (re
takes global flags at the start only: it becomes a scoped group). What RE2 rejects and re would
accept is an error as RE2's: backreferences, lookaround, (?<name>...), possessive repeats, \\Z.
Refused (UnsupportedPattern): Unicode classes \\p{...}, \\C, the (?U) flag, a flag setting after
the start of a group that has a later |, and negated classes inside brackets. RE2 rewrites (\\0 to
\\9, \\\\) are parsed here too; replace follows RE2::Replace and RE2::GlobalReplace.
"""
import functools
import re


class InvalidPattern(ValueError):
    """A pattern RE2 rejects."""


class UnsupportedPattern(ValueError):
    """A pattern RE2 accepts that Python's re cannot express the same way."""


_ESCAPE_CLASSES = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_POSIX = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
          "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
          "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
          "xdigit": "0-9A-Fa-f"}
_KEPT_ESCAPES = set("afnrtv") | {c for c in map(chr, range(33, 127)) if not c.isalnum()}
_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_HEX = re.compile(r"x(?:\{([0-9A-Fa-f]+)\}|([0-9A-Fa-f]{2}))")
_FLAGS = re.compile(r"\?(-?[imsU]+|[imsU]+-[imsU]*)([:)])")
_NAME = re.compile(r"\?P<([A-Za-z_][A-Za-z0-9_]*)>")


def _hex(p, i):
    """(the escape \\x... at p[i] ('x') as re text, the index after it)."""
    m = _HEX.match(p, i)
    if not m:
        raise InvalidPattern(f"invalid escape sequence: \\{p[i:i + 4]}")
    code = int(m.group(1) or m.group(2), 16)
    if code > 0x10FFFF:
        raise InvalidPattern(f"invalid escape sequence: \\{m.group(0)}")
    return f"\\U{code:08x}", m.end()


def _class(p, i):
    """(the bracketed class starting at p[i] ('[') as re text, the index after it)."""
    out, i = ["["], i + 1
    if p.startswith("^", i):
        out.append("^" + _NOT_BYTES)
        i += 1
    first = True
    while True:
        if i >= len(p):
            raise InvalidPattern(f"missing closing ]: {p}")
        c = p[i]
        if c == "]" and not first:
            return "".join(out) + "]", i + 1
        first = False
        if p.startswith("[:", i):
            end = p.find(":]", i + 2)
            name = p[i + 2:end] if end > 0 else ""
            if name.startswith("^"):
                raise UnsupportedPattern(f"the negated class [:{name}:] inside brackets")
            if name not in _POSIX:
                raise InvalidPattern(f"invalid character class range: [:{name}:]")
            out.append(_POSIX[name])
            i = end + 2
        elif c == "\\" and i + 1 < len(p):
            e = p[i + 1]
            if e in _ESCAPE_CLASSES:
                out.append(_ESCAPE_CLASSES[e])
            elif e in "DWS":
                raise UnsupportedPattern(f"the negated class \\{e} inside brackets")
            elif e in "pP":
                raise UnsupportedPattern(f"the Unicode class \\{e}")
            elif e == "x":
                text, i = _hex(p, i + 1)
                out.append(text)
                continue
            elif e in _KEPT_ESCAPES:
                out.append("\\" + e)
            else:
                raise InvalidPattern(f"invalid escape sequence: \\{e}")
            i += 2
        else:
            out.append(c if c == "-" or c.isalnum() else re.escape(c))
            i += 1


def _escape(p, i):
    """(the escape at p[i] ('\\') outside brackets as re text, the index after it)."""
    if i + 1 >= len(p):
        raise InvalidPattern("trailing \\")
    e = p[i + 1]
    if e in _ESCAPE_CLASSES:
        return f"[{_ESCAPE_CLASSES[e]}]", i + 2
    if e in "DWS":
        return f"[^{_ESCAPE_CLASSES[e.lower()]}{_NOT_BYTES}]", i + 2
    if e in "bB":
        return f"(?a:\\{e})", i + 2
    if e == "A":
        return "\\A", i + 2
    if e == "z":
        return "\\Z", i + 2
    if e == "x":
        return _hex(p, i + 1)
    if e == "Q":
        end = p.find("\\E", i + 2)
        end = len(p) if end < 0 else end
        return re.escape(p[i + 2:end]), end + 2
    if e == "E":
        return "", i + 2
    if e in "pPC":
        raise UnsupportedPattern(f"\\{e} (Unicode classes and single bytes)")
    if e in _KEPT_ESCAPES:
        return "\\" + e, i + 2
    raise InvalidPattern(f"invalid escape sequence: \\{e}")


class _Group:
    """An open group of the pattern: its m and s flags, the scoped groups a flag setting opened in
    it (closed with it), whether one was opened after its start, and whether it is still empty."""

    __slots__ = ("dotall", "empty", "multiline", "wrapped_late", "wraps")

    def __init__(self, outer=None):
        self.multiline, self.dotall = (outer.multiline, outer.dotall) if outer else (False, False)
        self.wraps, self.wrapped_late, self.empty = 0, False, True


def _set_flags(p, i, m, groups):
    """(re text, index after) for the flag group m at p[i] ('('): (?flags:...) opens a group with
    the flags; (?flags) holds to the end of the enclosing group, as RE2's, so it becomes a scoped
    group closed with the enclosing one (re takes global flags at the pattern's start only)."""
    flags, end = m.group(1), m.group(2)
    if "U" in flags:
        raise UnsupportedPattern("the non-greedy flag (?U)")
    on, _, off = flags.partition("-")
    g = groups[-1] if end == ")" else _Group(groups[-1])
    for flag, attr in (("m", "multiline"), ("s", "dotall")):
        if flag in on or flag in off:
            setattr(g, attr, flag in on)
    if end == ":":
        groups.append(g)
    else:
        g.wraps += 1
        g.wrapped_late |= not g.empty
    return f"(?{flags}:", m.end()


_NOT_BYTES = "\udc80-\udcff"  # bytes that are not UTF-8 (surrogate-escaped): RE2 matches them with nothing


@functools.lru_cache(maxsize=256)
def compile_re2(pattern):
    """The compiled Python regex that matches as RE2 does with pattern (str), on text decoded with
    'surrogateescape'; InvalidPattern or UnsupportedPattern."""
    out, i, n, p = [], 0, len(pattern), pattern
    groups = [_Group()]
    while i < n:
        c, g = p[i], groups[-1]
        repeat = flags_only = False
        if c == "\\":
            text, i = _escape(p, i)
        elif c == "[":
            text, i = _class(p, i)
        elif c == "(" and p.startswith("?", i + 1):
            m, name = _FLAGS.match(p, i + 1), _NAME.match(p, i + 1)
            if name:
                groups.append(_Group(g))
                text, i = f"(?P<{name.group(1)}>", name.end()
            elif p.startswith("?:", i + 1):
                groups.append(_Group(g))
                text, i = "(?:", i + 3
            elif m:
                text, i = _set_flags(p, i, m, groups)
                flags_only = m.group(2) == ")"
            else:
                raise InvalidPattern(f"invalid perl operator: {p[i:i + 3]}")
        elif c == "(":
            groups.append(_Group(g))
            text, i = "(", i + 1
        elif c == ")":
            if len(groups) == 1:
                raise InvalidPattern(f"unexpected ): {p}")
            text, i = ")" * (g.wraps + 1), i + 1
            groups.pop()
        elif c == "|":
            if g.wrapped_late:
                raise UnsupportedPattern("flags set inside a group before an alternation (|) of that group")
            text, i = "|", i + 1
        elif c == "$":
            text, i = "$" if g.multiline else "\\Z", i + 1
        elif c == ".":
            text, i = f"[^{'' if g.dotall else chr(92) + 'n'}{_NOT_BYTES}]", i + 1
        elif c == "{" and _REPEAT.match(p, i):
            m = _REPEAT.match(p, i)
            if any(int(d) > 1000 for d in m.groups() if d):
                raise InvalidPattern(f"invalid repetition size: {m.group(0)}")
            text, i, repeat = m.group(0), m.end(), True
        elif c == "{":
            text, i = "\\{", i + 1
        elif c in "*+?":
            text, i, repeat = c, i + 1, True
        else:
            text, i = c, i + 1
        out.append(text)
        g.empty &= flags_only
        if repeat:  # a repetition: lazy with ?, and RE2 has no possessive or double one
            if p.startswith("?", i):
                out.append("?")
                i += 1
            if i < n and p[i] in "*+":
                raise InvalidPattern(f"bad repetition operator: {p[i - 1:i + 1]}")
    if len(groups) > 1:
        raise InvalidPattern(f"missing ): {p}")
    out.append(")" * groups[0].wraps)
    try:
        return re.compile("".join(out))
    except re.error as e:
        raise InvalidPattern(str(e)) from None


def parse_rewrite(rewrite):
    """RE2's rewrite string as a list of literal strings and group numbers (\\0 to \\9, \\\\)."""
    parts, literal, i = [], [], 0
    while i < len(rewrite):
        c = rewrite[i]
        if c != "\\":
            literal.append(c)
        elif i + 1 < len(rewrite) and rewrite[i + 1].isdigit() and rewrite[i + 1].isascii():
            parts += ["".join(literal), int(rewrite[i + 1])]
            literal = []
            i += 1
        elif rewrite.startswith("\\\\", i):
            literal.append("\\")
            i += 1
        else:
            raise InvalidPattern(f"invalid rewrite pattern: {rewrite}")
        i += 1
    return parts + ["".join(literal)]


def _rewrite(parts, m):
    return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)


def replace(rx, parts, s, global_):
    """s with rx's first (or, global_, every) match replaced by the rewrite parts, as RE2::Replace
    and RE2::GlobalReplace: unchanged when the rewrite names a group rx lacks; an empty match right
    after the previous match is skipped."""
    if max([p for p in parts if not isinstance(p, str)], default=0) > rx.groups:
        return s
    if not global_:
        m = rx.search(s)
        return s if m is None else s[:m.start()] + _rewrite(parts, m) + s[m.end():]
    out, pos, last_end = [], 0, None
    while pos <= len(s):
        m = rx.search(s, pos)
        if m is None:
            break
        out.append(s[pos:m.start()])
        if m.start() == m.end() == last_end:
            out.append(s[pos:pos + 1])
            pos += 1
            continue
        out.append(_rewrite(parts, m))
        pos = last_end = m.end()
    return "".join(out) + s[pos:]
