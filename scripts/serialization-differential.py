#!/usr/bin/env python3
"""Differential cases for Courier's form and multipart serializers, judged by Python's standard
library (what many servers run): urllib.parse for forms, email.parser for multipart bodies.

Run by Tests/CourierTests/Serialization/PythonSerializationDifferentialTests.swift; needs only
python3, no packages.

  serialization-differential.py form-values SEED COUNT
      Prints a JSON list of cases {value, nesting, arrays, bools, spaces}: random keyed values
      (strings of every Unicode plane with the form's own separators, empty strings, Booleans,
      nulls, arrays and objects nested in one another) and the encoder's options.
  serialization-differential.py form-check SEED COUNT FILE
      FILE holds the query Courier wrote for each case of form-values (same SEED and COUNT),
      as a JSON list of strings. Prints a JSON list of problems (empty when
      urllib.parse.parse_qsl(keep_blank_values=True, strict_parsing=True) reads from each
      exactly the pairs the case's value flattens to).
  serialization-differential.py form-queries SEED COUNT
      Prints a JSON list of {query, pairs}: random pairs with distinct keys written by
      urllib.parse.urlencode (quote_plus, or quote_via=quote, and hex in lower case), or values
      of escaped bytes that need not be UTF-8 (pairs as parse_qsl reads them), for Courier's
      URLEncodedFormDecoder to read back.
  serialization-differential.py multipart-forms SEED COUNT
      Prints a JSON list of forms {boundary, parts, refused}: parts {name, fileName, contentType,
      content (base64), kind: text | data | file} with hostile names and contents, an optional
      custom boundary; `refused` is whether Courier must refuse the form (a boundary RFC 2046
      does not allow, a content type with CR or LF, or a boundary delimiter at the start of an
      in-memory part's content or after a CR or LF in it, where email.parser sees one).
  serialization-differential.py multipart-check SEED COUNT FILE
      FILE holds, for each form, {contentType, body (base64)} or null when Courier refused it.
      Prints a JSON list of problems (empty when email.parser.BytesParser with policy HTTP reads
      from each body exactly the form's parts, names and file names escaped as browsers escape
      them, and Courier refused exactly the forms it must).
  serialization-differential.py content-codings
      Prints a JSON list of responses {name, contentEncoding, body (base64), expected (base64,
      or null for an error)}: content coded by Python's gzip and zlib the ways servers send it
      (members concatenated, raw and zlib deflate, stacked codings, names in any case) and the
      ways a lying server does (bytes after the end, a wrong CRC-32 or size, cut short, codings
      nobody offered). `expected` is what Python's gzip.decompress and zlib decompressor read
      (deflate: zlib, else raw), strictly: a stream that does not end, or has bytes after its
      end, is an error; `deviation` says where Courier chooses otherwise, and why.
"""

import base64
import gzip
import zlib
import email.parser
import email.policy
import json
import random
import re
import sys
import unicodedata
import urllib.parse

SEPARATORS = "&=+%; #?[].\"\\\r\n\t/"


def random_char(rng):
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(SEPARATORS)
    if roll < 0.5:
        return chr(rng.randint(0x20, 0x7E))
    if roll < 0.6:
        return chr(rng.randint(0x80, 0x7FF))
    if roll < 0.75:
        while True:
            scalar = rng.randint(0x800, 0xFFFF)
            if not 0xD800 <= scalar <= 0xDFFF:
                return chr(scalar)
    plane = rng.randint(1, 16)
    return chr(plane * 0x10000 + rng.randint(0, 0xFFFF))


def random_text(rng, most=8):
    return "".join(random_char(rng) for _ in range(rng.randint(0, most)))


def swift_key(text):
    """Swift compares strings by canonical equivalence: two keys equal that way are one key."""
    return unicodedata.normalize("NFD", text)


def random_key(rng, nesting, taken):
    while True:
        key = random_text(rng, 6)
        # Courier refuses keys it cannot write unambiguously: empty, '[' or ']' (and '.' when
        # '.' nests); those are tested on their own.
        key = key.replace("[", "(").replace("]", ")")
        if nesting == "dots":
            key = key.replace(".", ",")
        if key and swift_key(key) not in taken:
            taken.add(swift_key(key))
            return key


def random_value(rng, nesting, depth):
    roll = rng.random()
    if depth < 3 and roll < 0.15:
        return [random_value(rng, nesting, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and roll < 0.3:
        return random_object(rng, nesting, depth + 1)
    if roll < 0.4:
        return rng.random() < 0.5
    if roll < 0.45:
        return None
    return random_text(rng)


def random_object(rng, nesting, depth):
    taken = set()
    return {random_key(rng, nesting, taken): random_value(rng, nesting, depth) for _ in range(rng.randint(0, 4))}


def form_values(seed, count):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        nesting = rng.choice(["brackets", "dots"])
        cases.append({
            "value": random_object(rng, nesting, 0),
            "nesting": nesting,
            "arrays": rng.choice(["brackets", "indexed", "repeated"]),
            "bools": rng.choice(["literal", "numeric"]),
            "spaces": rng.choice(["percentEncoded", "plus"]),
        })
    return cases


def flatten(case):
    """The pairs Courier's documented form of a value: `a[b]` or `a.b`, `a[]`, `a[0]` or `a`."""
    pairs = []

    def walk(value, key):
        if value is None:
            return
        if isinstance(value, bool):
            text = ("true" if value else "false") if case["bools"] == "literal" else ("1" if value else "0")
            pairs.append((key, text))
        elif isinstance(value, str):
            pairs.append((key, value))
        elif isinstance(value, list):
            # A null element is left out, as any nil is: the indices count the others.
            for index, item in enumerate(item for item in value if item is not None):
                suffix = {"brackets": "[]", "indexed": "[%d]" % index, "repeated": ""}[case["arrays"]]
                walk(item, key + suffix)
        else:
            for name, item in value.items():
                walk(item, name if key is None else (key + "[" + name + "]" if case["nesting"] == "brackets"
                                                     else key + "." + name))

    walk(case["value"], None)
    return pairs


def by_key(pairs):
    """Pairs in key order, those of one key in the order written (the order of keys is the
    encoder's choice; the order of one key's values is the array's)."""
    return sorted(pairs, key=lambda pair: pair[0])


def load_written(path, cases, problems):
    """What Courier wrote for `cases`, from the JSON list in the file at `path`."""
    with open(path, encoding="utf-8") as f:
        written = json.load(f)
    if len(written) != len(cases):
        problems.append("%d written for %d cases" % (len(written), len(cases)))
    return written


def form_check(seed, count, path):
    cases = form_values(seed, count)
    problems = []
    queries = load_written(path, cases, problems)
    for index, (case, query) in enumerate(zip(cases, queries)):
        expected = by_key(flatten(case))
        try:
            read = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
        except ValueError as error:
            problems.append("case %d: parse_qsl refused %r: %s" % (index, query, error))
            continue
        if by_key(read) != expected:
            problems.append("case %d: %r read as %r, expected %r" % (index, query, by_key(read), expected))
        if case["spaces"] == "percentEncoded" and "+" in query:
            problems.append("case %d: a '+' in %r, which spaces=percentEncoded never writes" % (index, query))
    return problems


def form_queries(seed, count):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        taken = set()
        pairs = []
        for _ in range(rng.randint(0, 5)):
            # '[' nests in Courier's reading (and '.' with dot nesting): plain keys here.
            key = random_key(rng, "dots", taken)
            pairs.append((key, random_text(rng)))
        style = rng.choice(["plus", "quote", "lower", "bytes"])
        if style == "bytes":
            # Escaped bytes that need not be UTF-8 (a server in Latin-1, a cut sequence): read
            # with U+FFFD for each maximal invalid subpart, as parse_qsl reads them.
            raw = [(key, bytes(rng.choice([0x41, 0x80, 0xBF, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF, rng.randint(0, 255)])
                               for _ in range(rng.randint(0, 6)))) for key, _ in pairs]
            query = "&".join(urllib.parse.quote(key, safe="") + "=" + urllib.parse.quote_from_bytes(value, safe="")
                             for key, value in raw)
            pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        elif style == "plus":
            query = urllib.parse.urlencode(pairs)
        else:
            query = urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
            if style == "lower":
                query = re.sub(r"%[0-9A-F]{2}", lambda match: match.group(0).lower(), query)
        cases.append({"query": query, "pairs": [list(pair) for pair in pairs]})
    return cases


BCHARS = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ")
HOSTILE = ["\"", "\\", "\r", "\n", ";", "\x00", "é", "😀", "%22", "\r\n--", "name=\"x\"", " "]


def hostile_name(rng):
    return "".join(rng.choice(HOSTILE) if rng.random() < 0.4 else random_char(rng)
                   for _ in range(rng.randint(0, 8)))


def valid_boundary(boundary):
    return 1 <= len(boundary) <= 70 and not boundary.endswith(" ") and all(c in BCHARS for c in boundary)


def holds_delimiter(content, boundary):
    dash = b"--" + boundary.encode("utf-8")
    return content.startswith(dash) or b"\n" + dash in content or b"\r" + dash in content


def multipart_forms(seed, count):
    rng = random.Random(seed)
    forms = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.5:
            boundary = None
        elif roll < 0.8:
            boundary = "".join(rng.choice("abcXYZ019'()+_,-./:=? ") for _ in range(rng.randint(1, 12))).rstrip() or "b"
        else:
            # Too long, empty, a trailing space, or characters outside RFC 2046's grammar.
            boundary = rng.choice(["x" * 71, "", "ab ", "a\r\nb", "a\"b", "a;b", "é", "a\x00"])
        parts = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["text", "data", "file"])
            content = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 20)))
            if kind == "text":
                content = random_text(rng, 12).encode("utf-8")
            # A file's content is not searched for the boundary (Docs/Serializers.md).
            if boundary and kind != "file" and rng.random() < 0.3:
                tail = rng.choice(["", "--", "--\r\n", "\r\n"])
                content += rng.choice([b"", b"\r\n", b"\n", b"\r"]) + ("--" + boundary + tail).encode("utf-8")
            part = {"kind": kind, "name": hostile_name(rng), "content": base64.b64encode(content).decode()}
            if kind != "text":
                part["fileName"] = hostile_name(rng) if rng.random() < 0.8 else None
                part["contentType"] = rng.choice(
                    ["text/plain; charset=utf-8", "image/png", None, None, None, None, "text/plain\r\nX-Injected: 1"])
            parts.append(part)
        # A content type cannot be escaped: one with a CR, LF or NUL is refused.
        refused = any(re.search("[\r\n\x00]", part.get("contentType") or "") for part in parts)
        refused = refused or (boundary is not None and not valid_boundary(boundary))
        if boundary is not None and not refused:
            refused = any(part["kind"] != "file" and holds_delimiter(base64.b64decode(part["content"]), boundary)
                          for part in parts)
        forms.append({"boundary": boundary, "parts": parts, "refused": refused})
    return forms


def escape_name(name):
    """WHATWG HTML's escaping in multipart/form-data, and a backslash, which RFC 2045's quoted
    strings read as an escape."""
    return name.replace("\\", "%5C").replace("\"", "%22").replace("\r", "%0D").replace("\n", "%0A")


def header_text(value):
    """A header value as str: email.parser keeps non-ASCII bytes as surrogate escapes."""
    if value is None:
        return None
    return str(value).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def multipart_check(seed, count, path):
    forms = multipart_forms(seed, count)
    problems = []
    written = load_written(path, forms, problems)
    for index, (form, body) in enumerate(zip(forms, written)):
        if body is None:
            if not form["refused"]:
                problems.append("form %d: Courier refused a form it can write: %r" % (index, form))
            continue
        if form["refused"]:
            problems.append("form %d: Courier wrote a form it must refuse: %r" % (index, form))
            continue
        raw = b"Content-Type: " + body["contentType"].encode("utf-8") + b"\r\n\r\n" + base64.b64decode(body["body"])
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
        read = []
        for part in message.iter_parts():
            disposition = part.get("Content-Disposition")
            read.append({
                "disposition": None if disposition is None else disposition.content_disposition,
                "name": header_text(part.get_param("name", header="content-disposition")),
                "fileName": header_text(part.get_param("filename", header="content-disposition")),
                "contentType": None if part.get("Content-Type") is None else str(part.get("Content-Type")),
                "content": part.get_payload(decode=True),
                "headers": sorted(part.keys()),
            })
        expected = []
        for part in form["parts"]:
            file_name = part.get("fileName")
            if part["kind"] == "file" and file_name is None:
                file_name = "upload.bin"  # the last component of the test's file path
            content_type = part.get("contentType")
            if part["kind"] != "text" and content_type is None:
                content_type = "application/octet-stream"
            expected.append({
                "disposition": "form-data",
                "name": escape_name(part["name"]),
                "fileName": None if file_name is None else escape_name(file_name),
                # As email.parser renders it (`charset="utf-8"`).
                "contentType": None if content_type is None else str(
                    email.policy.HTTP.header_factory("Content-Type", content_type)),
                "content": base64.b64decode(part["content"]),
                "headers": sorted(["Content-Disposition"] + (["Content-Type"] if content_type else [])),
            })
        if message.defects or read != expected:
            problems.append("form %d (boundary %r): email.parser read %r (defects %r), expected %r"
                            % (index, form["boundary"], read, message.defects, expected))
    return problems


def python_inflate(coding, body):
    """What Python reads from `body` coded with `coding`, strictly; raises when it cannot."""
    if coding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if coding == "deflate":
        for bits in (15, -15):
            inflater = zlib.decompressobj(bits)
            try:
                content = inflater.decompress(body)
            except zlib.error:
                continue
            if inflater.eof and not inflater.unused_data:
                return content
        raise ValueError("not a whole zlib or raw deflate stream")
    if coding == "identity":
        return body
    raise ValueError("no decoder for " + coding)


def python_reading(content_encoding, body):
    try:
        for coding in reversed([name.strip().lower() for name in content_encoding.split(",")]):
            body = python_inflate(coding, body)
        return base64.b64encode(body).decode()
    except (OSError, EOFError, ValueError, zlib.error):
        return None


def content_codings():
    content = b"".join(b"line %d of a JSON-ish answer {\"id\": %d}\n" % (i, i * 7) for i in range(2000))
    half = len(content) // 2
    member = gzip.compress(content, mtime=0)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = raw.compress(content) + raw.flush()
    bad_crc = member[:-8] + bytes([member[-8] ^ 0xFF]) + member[-7:]
    bad_size = member[:-4] + bytes([member[-4] ^ 0x01]) + member[-3:]
    cases = [
        ("gzip", "gzip", member),
        ("gzip in upper case", "GZIP", member),
        ("x-gzip", "x-gzip", member),
        ("two gzip members", "gzip", gzip.compress(content[:half], mtime=0) + gzip.compress(content[half:], mtime=0)),
        ("an empty gzip member between two", "gzip",
         gzip.compress(content[:half], mtime=0) + gzip.compress(b"", mtime=0) + gzip.compress(content[half:], mtime=0)),
        ("gzip with bytes after its end", "gzip", member + b"<html>garbage</html>"),
        ("gzip with a partial member after its end", "gzip", member + member[:5]),
        ("gzip with a wrong CRC-32", "gzip", bad_crc),
        ("gzip with a wrong size", "gzip", bad_size),
        ("gzip cut before its trailer", "gzip", member[:-8]),
        ("deflate (zlib)", "deflate", zlib.compress(content)),
        ("deflate (raw)", "deflate", raw),
        ("deflate in mixed case", "DeFlate", zlib.compress(content)),
        ("deflate (zlib) with bytes after its end", "deflate", zlib.compress(content) + b"\x00junk"),
        ("deflate (zlib) with a wrong Adler-32", "deflate", zlib.compress(content)[:-1] + b"\x00"),
        ("gzip, gzip", "gzip, gzip", gzip.compress(member, mtime=0)),
        ("deflate, gzip", "deflate, gzip", gzip.compress(zlib.compress(content), mtime=0)),
        ("identity, gzip", "identity, gzip", member),
        ("gzip, identity", "gzip,identity", member),
        ("br", "br", member),
        ("zstd", "zstd", member),
        ("x-foo", "x-foo", content),
    ]
    result = []
    for name, coding, body in cases:
        result.append({"name": name, "contentEncoding": coding, "body": base64.b64encode(body).decode(),
                       "expected": python_reading(coding, body)})
    # gzip.decompress skips zero bytes after a member (GNU gzip's padding); Courier counts them
    # as bytes after the end of the stream, as OkHttp does (Docs/Security.md, 14).
    padded = member + bytes(8)
    result.append({"name": "gzip padded with zeros", "contentEncoding": "gzip",
                   "body": base64.b64encode(padded).decode(), "expected": None,
                   "deviation": "Python reads %d bytes" % len(gzip.decompress(padded))})
    return result


def main(arguments):
    if arguments == ["content-codings"]:
        json.dump(content_codings(), sys.stdout, ensure_ascii=True)
        return
    command, seed, count = arguments[0], int(arguments[1]), int(arguments[2])
    if command == "form-values":
        result = form_values(seed, count)
    elif command == "form-check":
        result = form_check(seed, count, arguments[3])
    elif command == "form-queries":
        result = form_queries(seed, count)
    elif command == "multipart-forms":
        result = multipart_forms(seed, count)
    elif command == "multipart-check":
        result = multipart_check(seed, count, arguments[3])
    else:
        sys.exit("unknown command " + command)
    json.dump(result, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main(sys.argv[1:])
