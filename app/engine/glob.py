"""Redis's glob matching (``stringmatchlen``), for KEYS, SCAN MATCH and stream name filters.

Ported rather than mapped onto ``fnmatch``: Redis negates classes with ``^``, escapes with
backslash, swaps reversed ranges and treats an unclosed ``[`` its own way.
"""

from __future__ import annotations


def glob_match(pattern: str, string: str) -> bool:
    raw = "surrogateescape"
    return _match(pattern.encode("utf-8", raw), 0, string.encode("utf-8", raw), 0, [False])


def _match(p: bytes, pi: int, s: bytes, si: int, skip_longer: list[bool]) -> bool:
    plen, slen = len(p), len(s)

    def at(i: int) -> int:
        return p[i] if i < plen else 0

    while pi < plen and si < slen:
        c = p[pi]
        if c == 42:  # '*'
            while pi + 1 < plen and p[pi + 1] == 42:
                pi += 1
            if pi + 1 == plen:
                return True
            while si < slen:
                if _match(p, pi + 1, s, si, skip_longer):
                    return True
                if skip_longer[0]:
                    return False
                si += 1
            skip_longer[0] = True
            return False
        elif c == 63:  # '?'
            si += 1
        elif c == 91:  # '['
            pi += 1
            negate = at(pi) == 94  # '^'
            if negate:
                pi += 1
            matched = False
            while True:
                if at(pi) == 92 and plen - pi >= 2:  # backslash escape
                    pi += 1
                    if p[pi] == s[si]:
                        matched = True
                elif at(pi) == 93:  # ']'
                    break
                elif pi >= plen:
                    pi -= 1
                    break
                elif plen - pi >= 3 and p[pi + 1] == 45:  # range a-z
                    lo, hi = p[pi], p[pi + 2]
                    if lo > hi:
                        lo, hi = hi, lo
                    pi += 2
                    if lo <= s[si] <= hi:
                        matched = True
                elif p[pi] == s[si]:
                    matched = True
                pi += 1
            if negate:
                matched = not matched
            if not matched:
                return False
            si += 1
        else:
            if c == 92 and plen - pi >= 2:  # backslash: match the next byte literally
                pi += 1
            if p[pi] != s[si]:
                return False
            si += 1
        pi += 1
        if si == slen:
            while at(pi) == 42:
                pi += 1
            break
    return pi >= plen and si == slen
