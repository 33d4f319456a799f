"""Redis's glob matching (``stringmatchlen``), for KEYS, SCAN MATCH and stream name filters.

Ported rather than mapped onto ``fnmatch``: Redis negates classes with ``^``, escapes with
backslash, swaps reversed ranges and treats an unclosed ``[`` its own way.

Redis recurses once per ``*`` (``stringmatchlen_impl``); a port that recursed too would
overflow Python's stack on a long pattern. Here the recursion is an explicit stack of the
``*`` frames still trying positions, with Redis 7.0's two guards kept exactly:

- ``skipLongerMatches``: once the rest of the pattern after some ``*`` matched nowhere in the
  rest of the string, no earlier ``*`` can do better, so the whole match fails;
- a nesting limit (``nesting > 1000``): a call nested deeper than 1000 ``*`` answers "no
  match" for that position, and its caller tries the next one, as redis-server 7.0.15 does.
"""

from __future__ import annotations

import re

MAX_NESTING = 1000  # Redis's "protection against abusive patterns"

_STAR, _QUESTION, _OPEN, _CLOSE, _CARET, _DASH, _BACKSLASH = 42, 63, 91, 93, 94, 45, 92
_STAR_AT = -1  # _segment's answer when it stops on a '*' that needs a nested call


def glob_match(pattern: str, string: str) -> bool:
    raw = "surrogateescape"
    return _match(pattern.encode("utf-8", raw), string.encode("utf-8", raw))


def _match(p: bytes, s: bytes) -> bool:
    slen = len(s)
    # One frame per '*' whose nested call is running: [pattern index after it, string index].
    stack: list[list[int]] = []
    pi = si = 0
    while True:
        if len(stack) > MAX_NESTING:
            outcome = 0
        else:
            outcome, pi, si = _segment(p, pi, s, si)
        if outcome == _STAR_AT:
            stack.append([pi, si])
            continue
        if outcome:
            return True  # a nested match is a match all the way up
        # No match from this position: the innermost '*' tries its next string position.
        if not stack:
            return False
        frame = stack[-1]
        frame[1] += 1
        if frame[1] >= slen:
            # That '*' matched nowhere: skipLongerMatches, so every caller gives up too.
            return False
        pi, si = frame


def _segment(p: bytes, pi: int, s: bytes, si: int) -> tuple[int, int, int]:
    """Match from ``(pi, si)`` up to the next ``*`` (one ``stringmatchlen_impl`` call).

    Answers ``(outcome, pi, si)``: 1 match, 0 no match, or _STAR_AT with ``pi`` just after
    a ``*`` whose rest must be tried at each string position from ``si`` on."""
    plen, slen = len(p), len(s)

    def at(i: int) -> int:
        return p[i] if i < plen else 0

    while pi < plen and si < slen:
        c = p[pi]
        if c == _STAR:
            while pi + 1 < plen and p[pi + 1] == _STAR:
                pi += 1
            if pi + 1 == plen:
                return 1, pi, si
            return _STAR_AT, pi + 1, si
        elif c == _QUESTION:
            si += 1
        elif c == _OPEN:
            pi += 1
            negate = at(pi) == _CARET
            if negate:
                pi += 1
            matched = False
            while True:
                if at(pi) == _BACKSLASH and plen - pi >= 2:  # backslash escape
                    pi += 1
                    if p[pi] == s[si]:
                        matched = True
                elif at(pi) == _CLOSE:
                    break
                elif pi >= plen:
                    pi -= 1
                    break
                elif plen - pi >= 3 and p[pi + 1] == _DASH:  # range a-z
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
                return 0, pi, si
            si += 1
        else:
            if c == _BACKSLASH and plen - pi >= 2:  # backslash: match the next byte literally
                pi += 1
            if p[pi] != s[si]:
                return 0, pi, si
            si += 1
        pi += 1
        if si == slen:
            while at(pi) == _STAR:
                pi += 1
            break
    return int(pi >= plen and si == slen), pi, si


def escape(name: str) -> str:
    """A pattern that matches exactly ``name``: Redis's globs take backslash escapes."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", name)
