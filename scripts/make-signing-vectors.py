#!/usr/bin/env python3
"""Writes Fixtures/signing/vectors.json: request-signing test vectors made with Python's own
hmac and hashlib, independently of Courier's Swift code (RequestSigner).

Canonical text (one line each, joined by "\\n"):
    METHOD, PATH (as sent, without the query), SORTED-QUERY (the query's name=value items as
    sent, sorted by name then value in byte order, joined by "&"), SHA256-HEX(BODY), TIMESTAMP,
    NONCE
Signature: lowercase hex HMAC-SHA256 of the canonical text under the key's secret.

    python3 scripts/make-signing-vectors.py      (rewrites the fixture)
"""
import base64
import hashlib
import hmac
import json
import os

CASES = [
    {"name": "get without query", "method": "GET", "target": "/v1/users/42", "body": b"",
     "secret": b"app-secret", "keyID": "app", "timestamp": "1700000000", "nonce": "00112233445566778899aabbccddeeff"},
    {"name": "query sorted by name then value", "method": "GET",
     "target": "/v1/search?q=swift&b=2&a=z&a=1&empty=", "body": b"",
     "secret": b"app-secret", "keyID": "app", "timestamp": "1700000001", "nonce": "0f0e0d0c0b0a09080706050403020100"},
    {"name": "percent-encoded path and query", "method": "GET",
     "target": "/v1/files/a%20b%2Fc?name=J%C3%BCrgen&tag=%26x", "body": b"",
     "secret": b"app-secret", "keyID": "app", "timestamp": "1700000002", "nonce": "ffffffffffffffffffffffffffffffff"},
    {"name": "json post", "method": "POST", "target": "/v1/posts",
     "body": b'{"title":"Hello","tags":["a","b"]}',
     "secret": b"app-secret", "keyID": "app", "timestamp": "1700000003", "nonce": "1234567890abcdef1234567890abcdef"},
    {"name": "other key, binary body", "method": "PUT", "target": "/v1/admin/blob?v=2",
     "body": bytes(range(256)),
     "secret": bytes.fromhex("7f00ff10a5"), "keyID": "admin", "timestamp": "1700000004",
     "nonce": "abcdefabcdefabcdefabcdefabcdefab"},
]


def canonical(case):
    target = case["target"]
    path, _, query = target.partition("?")
    items = [item for item in query.split("&") if item] if query else []

    def key(item):
        name, _, value = item.partition("=")
        return (name.encode(), value.encode())

    sorted_query = "&".join(sorted(items, key=key))
    digest = hashlib.sha256(case["body"]).hexdigest()
    return "\n".join([case["method"], path, sorted_query, digest, case["timestamp"], case["nonce"]])


def main():
    vectors = []
    for case in CASES:
        text = canonical(case)
        vectors.append({
            "name": case["name"],
            "method": case["method"],
            "target": case["target"],
            "bodyBase64": base64.b64encode(case["body"]).decode(),
            "keyID": case["keyID"],
            "secretHex": case["secret"].hex(),
            "timestamp": case["timestamp"],
            "nonce": case["nonce"],
            "canonical": text,
            "signature": hmac.new(case["secret"], text.encode(), hashlib.sha256).hexdigest(),
        })
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path = os.path.join(root, "Fixtures", "signing", "vectors.json")
    with open(path, "w") as out:
        json.dump({"generator": "scripts/make-signing-vectors.py", "vectors": vectors}, out, indent=2)
        out.write("\n")


if __name__ == "__main__":
    main()
