#!/usr/bin/env python3
"""Writes the golden protobuf fixtures in Fixtures/protobuf/ with Google's own runtime.

The schema comes from a descriptor set made by `protoc --include_imports --descriptor_set_out`
from Protos/ (committed as Fixtures/protobuf/courier.desc), not from generated _pb2 modules, so
the versions of protoc and the Python package never need to match.

For each case it writes <case>.bin (serialized with deterministic=True, so map entries are
sorted by key) and adds to expected.json the value as the Swift test models' Codable JSON:
camelCase keys; int64 as numbers; bytes as base64; enums as numbers; maps with string keys as
objects and other keys as [key, value, ...] arrays (how Swift's Dictionary codes them); fields
with presence (oneof members, proto3 `optional`, proto2 `optional`, messages) only when set,
except the proto2 fields the Swift model declares non-optional to read their defaults.

The catalog cases (Protos/courier/test/catalog.proto: well-known types, an import from
Fixtures/protobuf/shared, recursion, maps) go to catalog_*.bin and catalog.json instead, with a
newer version of the schema (Fixtures/protobuf/v2) for unknown fields: CatalogGoldenTests holds
the expected values written out in Swift.

Usage: scripts/make-protobuf-fixtures.py [--check]
  with Debian's python3-protobuf (4.21) or a newer `pip install protobuf`. --check writes into a
  scratch copy and fails when the committed fixtures differ (scripts/test.sh runs it). The
  committed files are the output of Debian 12's python3-protobuf 4.21, which sorts map entries
  by key (deterministic=True); another runtime version may order them otherwise.
"""

import base64
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor

def message_class(descriptor):
    """The message class of `descriptor`: `GetMessageClass` (protobuf 4.22 and later), else the
    factory of older runtimes (Debian 12's python3-protobuf is 4.21)."""
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)


def is_repeated(field):
    return field.label == FieldDescriptor.LABEL_REPEATED


def fill(message, fields):
    """Sets `fields` (message fields as dicts, repeated ones as lists) on `message`, in place:
    older runtimes take no dicts for well-known types in a constructor."""
    for name, value in fields.items():
        field = message.DESCRIPTOR.fields_by_name[name]
        target = getattr(message, name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                if value_field.message_type is not None:
                    fill(target[key], item)
                else:
                    target[key] = item
        elif field.message_type is not None and is_repeated(field):
            for item in value:
                fill(target.add(), item)
        elif field.message_type is not None:
            target.SetInParent()
            fill(target, value)
        elif is_repeated(field):
            target.extend(value)
        else:
            setattr(message, name, value)
    return message


def build(cls, **fields):
    return fill(cls(), fields)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Fixtures", "protobuf")
DESC = os.path.join(OUT, "courier.desc")
# The folder Protos/ imports from besides itself (scripts/generate-protos.sh's job for Protos/).
SHARED = os.path.join(OUT, "shared")
# protoc, or protoc-c (Debian protobuf-c-compiler, which the build needs anyway): both are
# libprotoc and write the same descriptor set.
PROTOC = shutil.which("protoc") or shutil.which("protoc-c") or "protoc"

# proto2 fields with presence that the Swift test model declares non-optional (to read defaults).
NON_OPTIONAL = {
    "courier.test.Legacy": {"retries", "ratio", "enabled", "big", "values"},
}


def build_descriptor_set():
    protos = []
    for base, _, files in os.walk(os.path.join(ROOT, "Protos")):
        for name in files:
            if name.endswith(".proto"):
                protos.append(os.path.relpath(os.path.join(base, name), os.path.join(ROOT, "Protos")))
    protos.sort()
    subprocess.run(
        [PROTOC, "--include_imports", "--descriptor_set_out=" + DESC, "-I", os.path.join(ROOT, "Protos"), "-I", SHARED]
        + protos,
        check=True,
    )
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(DESC, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    return pool


def scalar_json(field, value):
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return swift_json(value)
    return value


def has_presence(field):
    return field.has_presence


def swift_json(message):
    result = {}
    desc = message.DESCRIPTOR
    keep = NON_OPTIONAL.get(desc.full_name, set())
    for field in desc.fields:
        key = field.json_name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            entries = sorted(getattr(message, field.name).items())
            if key_field.type == FieldDescriptor.TYPE_STRING:
                result[key] = {k: scalar_json(value_field, v) for k, v in entries}
            else:
                flat = []
                for k, v in entries:
                    flat += [k, scalar_json(value_field, v)]
                result[key] = flat
        elif is_repeated(field):
            result[key] = [scalar_json(field, v) for v in getattr(message, field.name)]
        elif has_presence(field) and field.name not in keep:
            if message.HasField(field.name):
                result[key] = scalar_json(field, getattr(message, field.name))
        else:
            result[key] = scalar_json(field, getattr(message, field.name))
    return result


def cases(pool):
    def new(type_name, **fields):
        return build(message_class(pool.FindMessageTypeByName(type_name)), **fields)

    point = lambda x, y, label="": {"x": x, "y": y, "label": label}
    yield "scalars_typical", new(
        "courier.test.Scalars",
        int32_value=42, int64_value=-9000000000, uint32_value=4000000000, uint64_value=12345678901234567890,
        sint32_value=-17, sint64_value=-123456789012, fixed32_value=3000000000, fixed64_value=9876543210,
        sfixed32_value=-5, sfixed64_value=-6000000000000, float_value=1.5, double_value=-2.25,
        bool_value=True, string_value="héllo, wörld ✓", bytes_value=bytes([0, 1, 2, 254, 255]), color=2,
    )
    yield "scalars_extremes", new(
        "courier.test.Scalars",
        int32_value=-2147483648, int64_value=-9223372036854775808, uint32_value=4294967295,
        uint64_value=18446744073709551615, sint32_value=2147483647, sint64_value=-9223372036854775808,
        fixed32_value=4294967295, fixed64_value=18446744073709551615, sfixed32_value=-2147483648,
        sfixed64_value=9223372036854775807, float_value=3.4028234663852886e38, double_value=5e-324,
        bool_value=True, string_value="x" * 300, bytes_value=bytes(range(256)), color=3,
    )
    yield "scalars_empty", new("courier.test.Scalars")
    yield "repeated_all", new(
        "courier.test.Repeated",
        packed_int32=[1, -1, 300, -2147483648, 2147483647], packed_sint64=[-1, 1, -9223372036854775808],
        packed_double=[0.5, -1.25, 1e300], packed_bool=[True, False, True], packed_fixed32=[0, 1, 4294967295],
        packed_colors=[1, 2, 3, 0], unpacked_int32=[7, -7, 70000], unpacked_float=[0.25, -8.5],
        unpacked_uint64=[0, 18446744073709551615], strings=["a", "", "ünïcode", "emoji 🚀"],
        blobs=[b"", b"\x00\x01", b"xyz"], points=[point(1, 2, "a"), point(-3, -4), point(0, 0, "origin")],
    )
    yield "repeated_empty", new("courier.test.Repeated")
    yield "maps_all", new(
        "courier.test.Maps",
        counts={"apples": 3, "bananas": -1, "": 0, "cherries": 2147483647},
        points_by_id={1: point(1, 1, "one"), -5: point(-5, 5), 9000000000: point(9, 9, "big")},
        names={1: "one", 2: "two", 4294967295: "max"},
        colors={"sky": 3, "grass": 2, "unset": 0},
    )
    yield "choice_number", new("courier.test.Choice", number=0, tail=1)
    yield "choice_text", new("courier.test.Choice", text="chosen", maybe_count=0, maybe_name="", tail=-1)
    yield "choice_point", new(
        "courier.test.Choice", point=point(3, 4, "p"), origin=point(0, 0), maybe_ratio=0.0, maybe_color=0
    )
    yield "choice_color", new("courier.test.Choice", color=1, maybe_count=-7, maybe_name="n", maybe_ratio=-0.5)
    yield "choice_none", new("courier.test.Choice")
    yield "legacy_minimal", new("courier.test.Legacy", id=1, name="min")
    yield "legacy_full", new(
        "courier.test.Legacy",
        id=-2, name="full", retries=0, greeting="hello", ratio=0.25, enabled=False, level=3, token=b"\x00tok",
        big=1, values=[1, 2, 3], child={"serial": -99, "note": "kid"},
    )
    profile = dict(
        user_id=1234567890123, display_name="Ada Lovelace", email="ada@example.com", tier=2, verified=True,
        created_at=1700000000, rating=4.75,
        address={"street": "12 Analytical Engine Way", "city": "London", "country_code": "GB",
                 "postal_code": "W1 1AA"},
        interests=["mathematics", "poetry", "engines", "music"], badge_ids=[1, 7, 42, 1001, 65536],
        stats={"followers": 10500, "following": 321, "posts": 87}, bio="First programmer.",
    )
    yield "demo_profile", new("courier.demo.UserProfile", **profile)
    posts = [
        dict(post_id=9000 + i, author_id=1234567890123, title="Post number %d" % i,
             body="Notes on the engine, part %d." % i, published_at=1700000000 + 3600 * i, likes=10 * i,
             tags=["engine", "notes"])
        for i in range(3)
    ]
    # Recursive messages: a category with its ancestors, children, grandchildren and a map of them.
    root = {"name": "root"}
    books = {"name": "books", "parent": root}
    yield "category_tree", new(
        "courier.test.Category",
        name="fiction", parent=books,
        children=[
            {"name": "fantasy", "children": [{"name": "epic"}, {"name": "urban", "parent": {"name": "fantasy"}}]},
            {"name": "crime"},
            {},
        ],
        related={"see also": {"name": "poetry", "parent": books}, "archive": {"name": "old"}},
    )
    literal = lambda n: {"literal": n}
    yield "expr_nested", new(
        "courier.test.Expr",
        binary={"op": "+", "left": literal(1), "right": {"binary": {
            "op": "*", "left": literal(-2), "right": {"binary": {"op": "-", "left": literal(0), "right": {}}}}}},
    )
    yield "demo_feed", new(
        "courier.demo.Feed", posts=posts, next_cursor="c2Vjb25kLXBhZ2U=",
        viewer=dict(user_id=7, display_name="Viewer", email="viewer@example.com", tier=1),
    )


def evolution_cases(v1_pool):
    """Unknown fields: v2 bytes (Fixtures/protobuf/v2) and what Google's runtime writes after
    reading them with the v1 schema of Protos/ (known fields, then the unknown ones)."""
    v2_dir = os.path.join(OUT, "v2")
    v2_desc = os.path.join(OUT, "v2", "evolution.desc")
    subprocess.run([PROTOC, "--descriptor_set_out=" + v2_desc, "-I", v2_dir, "courier/test/evolution.proto"],
                   check=True)
    v2_pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(open(v2_desc, "rb").read()).file:
        v2_pool.Add(f)
    os.remove(v2_desc)
    v2 = message_class(v2_pool.FindMessageTypeByName("courier.test.Record"))
    v1 = message_class(v1_pool.FindMessageTypeByName("courier.test.Record"))
    inner = {"note": "n", "score": -3, "labels": ["x", "y"]}
    yield "evolution_interleaved", v2(
        id=42, rank=-7, title="every kind", stamp=0x0102030405060708, inner=inner, mask=0xDEADBEEF,
        tags=["a", "b"], history=[inner, {"note": "old"}, {"score": 9}], blob=b"\x00\xff",
        details=[{"key": "k", "weight": 0.5}], deltas=[-1, 1, -300], ratio=1.25, big=18446744073709551615,
        status=2, statuses=[1, 2, 0, 2],
    ), v1
    yield "evolution_appended", v2(
        id=1, title="t", tags=["only"], blob=b"zz", details=[{"key": "d"}], deltas=[5], ratio=-2.5, big=7,
    ), v1


def catalog_cases(v1_pool):
    """Every feature of issue 19 in one schema; (name, message written by Google's runtime, v1 class)."""
    v2_dir = os.path.join(OUT, "v2")
    v2_desc = os.path.join(OUT, "v2", "catalog.desc")
    subprocess.run([PROTOC, "--include_imports", "--descriptor_set_out=" + v2_desc, "-I", v2_dir,
                    "-I", os.path.join(ROOT, "Protos"), "-I", SHARED, "courier/test/catalog.proto"], check=True)
    v2_pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(open(v2_desc, "rb").read()).file:
        v2_pool.Add(f)
    os.remove(v2_desc)
    v1 = message_class(v1_pool.FindMessageTypeByName("courier.test.CatalogEntry"))
    v2 = message_class(v2_pool.FindMessageTypeByName("courier.test.CatalogEntry"))
    money = message_class(v1_pool.FindMessageTypeByName("courier.shared.Money"))
    any_class = message_class(v1_pool.FindMessageTypeByName("google.protobuf.Any"))

    def value(**kind):
        return kind

    full = build(
        v1,
        sku="A-1",
        price={"currency": "EUR", "units": 12, "nanos": 500000000},
        created_at={"seconds": 1700000000, "nanos": 123456789},
        shelf_life={"seconds": -3, "nanos": -250000000},
        note={"value": ""},
        stock={"value": -9000000000},
        featured={"value": False},
        rank={"value": -1},
        aisle={"value": 4294967295},
        views={"value": 18446744073709551615},
        weight={"value": 0.5},
        score={"value": -1e300},
        thumbnail={"value": b"\x00\xffpng"},
        discontinued={},
        extra=value(null_value=0),
        history={"values": [value(number_value=1), value(string_value="two"), value(struct_value={})]},
        restocks=[{"seconds": -62135596800}, {"seconds": 253402300799, "nanos": 999999999}, {}],
        lead_times={"sea": {"seconds": 2592000}, "air": {"nanos": 1}},
        subtitle="",
        replacement={"sku": "A-2", "replacement": {"sku": "A-3", "created_at": {"seconds": 1}}},
        variants=[{"sku": "A-1-S", "stock": {"value": 0}}, {"sku": "A-1-L", "variants": [{"sku": "A-1-XL"}]}],
        prices_by_region={"eu": {"currency": "EUR", "units": 10}, "us": {"currency": "USD", "units": 11,
                                                                       "nanos": 990000000}},
        tags=[value(string_value="new"), value(bool_value=True)],
    )
    fields = full.attributes.fields
    fields["color"].string_value = "red"
    fields["size"].number_value = 42
    fields["flags"].list_value.values.add().bool_value = True
    fields["flags"].list_value.values.add().null_value = 0
    fields["nested"].struct_value.fields["deep"].number_value = -0.5
    full.detail.CopyFrom(any_class(type_url="type.googleapis.com/courier.shared.Money",
                                   value=money(currency="GBP", units=-7).SerializeToString(deterministic=True)))
    yield "catalog_full", full, v1
    yield "catalog_empty", v1(), v1
    evolved = build(
        v2,
        sku="B-9", supplier="acme", barcodes=[1, -2, 300], recalled_at={"seconds": 1800000000, "nanos": 5},
        created_at={"seconds": 1}, note={"value": "kept"},
        variants=[{"sku": "B-9-a", "supplier": "sub", "successor": {"sku": "B-9-b", "barcodes": [7]}}],
        successor={"sku": "B-10", "supplier": "next", "shelf_life": {"seconds": 60}},
        lead_times={"road": {"seconds": 86400}},
    )
    yield "catalog_evolved", evolved, v1


def main():
    pool = build_descriptor_set()
    catalog = {}
    for name, message, v1 in catalog_cases(pool):
        data = message.SerializeToString(deterministic=True)
        reread = v1.FromString(data)
        again = reread.SerializeToString(deterministic=True)
        evolved = type(message) is not v1
        outputs = (("v2.bin", data), ("v1.bin", again)) if evolved else (("bin", data),)
        for suffix, payload in outputs:
            with open(os.path.join(OUT, "%s.%s" % (name, suffix)), "wb") as f:
                f.write(payload)
        catalog[name] = {"message": reread.DESCRIPTOR.full_name, "size": len(again), "newer_schema": evolved,
                         "same_bytes": data == again}
    with open(os.path.join(OUT, "catalog.json"), "w") as f:
        json.dump(catalog, f, indent=2, sort_keys=True)
        f.write("\n")
    evolution = {}
    for name, message, v1 in evolution_cases(pool):
        data = message.SerializeToString(deterministic=True)
        reread = v1.FromString(data)
        again = reread.SerializeToString(deterministic=True)
        for suffix, payload in (("v2", data), ("v1", again)):
            with open(os.path.join(OUT, "%s.%s.bin" % (name, suffix)), "wb") as f:
                f.write(payload)
        evolution[name] = {"v1_value": swift_json(reread), "same_bytes": data == again}
    with open(os.path.join(OUT, "evolution.json"), "w") as f:
        json.dump(evolution, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    expected = {}
    for name, message in cases(pool):
        data = message.SerializeToString(deterministic=True)
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(data)
        expected[name] = {"message": message.DESCRIPTOR.full_name, "size": len(data), "value": swift_json(message)}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print("wrote %d fixtures and %d unknown-field cases to %s" % (len(expected), len(evolution),
                                                                 os.path.relpath(OUT, ROOT)))


def check():
    """Writes the fixtures into a copy of Fixtures/protobuf and compares every file with the
    committed one: non-zero when regenerating would change something."""
    global OUT, DESC, SHARED
    committed = OUT
    with tempfile.TemporaryDirectory() as scratch:
        OUT = os.path.join(scratch, "protobuf")
        DESC = os.path.join(OUT, "courier.desc")
        SHARED = os.path.join(OUT, "shared")
        shutil.copytree(committed, OUT)
        main()
        changed = []
        for base, _, files in os.walk(OUT):
            for name in files:
                made = os.path.join(base, name)
                kept = os.path.join(committed, os.path.relpath(made, OUT))
                if not os.path.exists(kept) or not filecmp.cmp(made, kept, shallow=False):
                    changed.append(os.path.relpath(kept, ROOT))
    if changed:
        print("make-protobuf-fixtures: regenerating changes %s; run scripts/make-protobuf-fixtures.py and "
              "commit the result" % ", ".join(sorted(changed)), file=sys.stderr)
        return 1
    print("make-protobuf-fixtures: the committed fixtures are what the script makes")
    return 0


if __name__ == "__main__":
    sys.exit(check() if sys.argv[1:] == ["--check"] else main())
