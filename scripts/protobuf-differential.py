#!/usr/bin/env python3
"""Differential cases for Courier's protobuf decoder and encoder, judged by Google's runtime.

Run by Tests/CourierProtobufTests/PythonDifferentialTests.swift (skipped there without
python3-protobuf). The schema is Fixtures/protobuf/courier.desc, as for the goldens
(scripts/make-protobuf-fixtures.py).

  protobuf-differential.py generate SEED COUNT
      Prints a JSON list of cases {message, variant, hex, value, openEnums}: random messages of
      the test schemas (every scalar at its bounds, UTF-8 of every length, unknown enum numbers,
      oneofs, proto3 `optional`, maps, nested and recursive messages), written in a form a
      parser must accept: two messages concatenated (a merge: scalars and oneofs last wins,
      repeated fields appended, map keys last wins, message fields merged), packed fields
      unpacked and unpacked ones packed, non-minimal varints (a bool as a varint > 1, padded
      integers), defaults written explicitly, fields in reverse order. `value` is what Google's
      runtime reads from `hex`, as the text of the Swift models' Codable JSON (`json_value`).
  protobuf-differential.py read FILE
      Reads a JSON list of {message, hex} from FILE and prints, for each, {value} (as above) or
      {error} when Google's runtime refuses the bytes.
"""

import base64
import json
import math
import os
import random
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESC = os.path.join(ROOT, "Fixtures", "protobuf", "courier.desc")

MESSAGES = ["courier.test.Scalars", "courier.test.Repeated", "courier.test.Maps", "courier.test.Choice",
            "courier.test.Category", "courier.test.Legacy", "courier.test.Record"]


def load_pool():
    pool = descriptor_pool.DescriptorPool()
    with open(DESC, "rb") as f:
        for file in descriptor_pb2.FileDescriptorSet.FromString(f.read()).file:
            pool.Add(file)
    return pool


def message_class(pool, name):
    descriptor = pool.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)  # protobuf < 4.22 (Debian 12)


def json_value(message):
    """The value in the Swift models' Codable JSON, as make-protobuf-fixtures.py writes it for the
    goldens (but for the test schemas only, and with what Debian 12's protobuf 4.21 has):
    camelCase keys, 64-bit integers as numbers, bytes as base64, enums as numbers, maps with
    string keys as objects and others as [key, value, ...], fields with presence only when set;
    infinities as the strings "Infinity" and "-Infinity" (JSON has no literal for them)."""
    def scalar(field, value):
        if field.type == FD.TYPE_BYTES:
            return base64.b64encode(value).decode("ascii")
        if field.type == FD.TYPE_MESSAGE:
            return json_value(value)
        if isinstance(value, float) and math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value

    result = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            entries = sorted(value.items())
            if field.message_type.fields_by_name["key"].type == FD.TYPE_STRING:
                result[field.json_name] = {k: scalar(value_field, v) for k, v in entries}
            else:
                result[field.json_name] = [x for k, v in entries for x in (k, scalar(value_field, v))]
        elif field.label == FD.LABEL_REPEATED:
            result[field.json_name] = [scalar(field, v) for v in value]
        elif not field.has_presence or message.HasField(field.name):
            result[field.json_name] = scalar(field, value)
    return result


# Random values ------------------------------------------------------------------------------

INT_BOUNDS = {
    FD.TYPE_INT32: (-2**31, 2**31 - 1), FD.TYPE_SINT32: (-2**31, 2**31 - 1), FD.TYPE_SFIXED32: (-2**31, 2**31 - 1),
    FD.TYPE_INT64: (-2**63, 2**63 - 1), FD.TYPE_SINT64: (-2**63, 2**63 - 1), FD.TYPE_SFIXED64: (-2**63, 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1), FD.TYPE_FIXED64: (0, 2**64 - 1),
}
# One character of each UTF-8 length, with the edges of each length.
CHARACTERS = ["a", "\x7f", "\x80", "é", "\u07ff", "\u0800", "€", "\ud7ff", "\ue000", "\uffff", "\U00010000", "🚀",
              "\U0010ffff"]
FLOATS = [0.0, 1.0, -1.5, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45,
          1.1754943508222875e-38, math.inf, -math.inf]
DOUBLES = [0.0, 1.0, -2.25, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 2.2250738585072014e-308,
           math.inf, -math.inf]


def random_scalar(rng, field, open_enums):
    t = field.type
    if t in INT_BOUNDS:
        low, high = INT_BOUNDS[t]
        return rng.choice([low, high, 0, 1, -1 if low < 0 else 2, rng.randint(low, high), rng.randint(-300, 300)
                           if low < 0 else rng.randint(0, 300)])
    if t in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        values = FLOATS if t == FD.TYPE_FLOAT else DOUBLES
        value = rng.choice(values + [rng.uniform(-1e6, 1e6)])
        # -0.0 only where it is kept: Courier refuses to encode it without presence (documented).
        if value == 0.0 and (field.has_presence or field.label == FD.LABEL_REPEATED) and rng.random() < 0.5:
            value = -0.0
        return value
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FD.TYPE_STRING:
        return "".join(rng.choice(CHARACTERS) for _ in range(rng.choice([0, 1, 2, 5, 16, 40])))
    if t == FD.TYPE_BYTES:
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 20])))
    if t == FD.TYPE_ENUM:
        numbers = [v.number for v in field.enum_type.values]
        if field.enum_type.file.syntax == "proto3" and rng.random() < 0.15:
            open_enums[0] = True
            return rng.choice([77, -5, 2**31 - 1, -2**31])
        return rng.choice(numbers)
    raise ValueError(field.full_name)


def fill(rng, message, depth, open_enums):
    desc = message.DESCRIPTOR
    oneofs_done = set()
    for field in desc.fields:
        oneof = field.containing_oneof
        if oneof is not None and not oneof.name.startswith("_"):
            if oneof.name in oneofs_done or rng.random() < 0.5:
                continue
            oneofs_done.add(oneof.name)
        elif field.label != FD.LABEL_REQUIRED and rng.random() < 0.35:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_field = field.message_type.fields_by_name["key"]
            value_field = field.message_type.fields_by_name["value"]
            target = getattr(message, field.name)
            for _ in range(rng.randint(0, 3)):
                key = random_scalar(rng, key_field, open_enums)
                if value_field.message_type is not None:
                    if depth < 3:
                        fill(rng, target[key], depth + 1, open_enums)
                else:
                    target[key] = random_scalar(rng, value_field, open_enums)
        elif field.label == FD.LABEL_REPEATED:
            target = getattr(message, field.name)
            for _ in range(rng.randint(0, 4)):
                if field.message_type is not None:
                    if depth < 3:
                        fill(rng, target.add(), depth + 1, open_enums)
                else:
                    target.append(random_scalar(rng, field, open_enums))
        elif field.message_type is not None:
            if depth < 3 or field.label == FD.LABEL_REQUIRED:
                getattr(message, field.name).SetInParent()
                fill(rng, getattr(message, field.name), depth + 1, open_enums)
        else:
            setattr(message, field.name, random_scalar(rng, field, open_enums))


# Wire forms ---------------------------------------------------------------------------------

def varint(value, padding=0):
    """`value` as a varint, with `padding` extra bytes (at most 10 in all) when asked."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    padding = min(padding, 10 - len(out))
    if padding > 0:
        out[-1] |= 0x80
        out += b"\x80" * (padding - 1) + b"\x00"
    return bytes(out)


def read_varint(data, index):
    value, shift = 0, 0
    while True:
        byte = data[index]
        index += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index
        shift += 7


def fields_of(data):
    """(number, wire type, value bytes or int) of each field, in order."""
    index, out = 0, []
    while index < len(data):
        key, index = read_varint(data, index)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, index = read_varint(data, index)
        elif wire == 1:
            value, index = data[index:index + 8], index + 8
        elif wire == 5:
            value, index = data[index:index + 4], index + 4
        else:
            length, index = read_varint(data, index)
            value, index = data[index:index + length], index + length
        out.append((number, wire, value))
    return out


def write_field(number, wire, value, padding=0):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value, padding)
    if wire == 2:
        return key + varint(len(value)) + value
    return key + value


SCALAR_WIRE = {FD.TYPE_DOUBLE: 1, FD.TYPE_FIXED64: 1, FD.TYPE_SFIXED64: 1, FD.TYPE_FLOAT: 5, FD.TYPE_FIXED32: 5,
               FD.TYPE_SFIXED32: 5}


def element_wire(field):
    return SCALAR_WIRE.get(field.type, 0)


def repack(rng, desc, data):
    """Packed fields written unpacked and unpacked ones packed; varints padded; bools > 1."""
    out = bytearray()
    for number, wire, value in fields_of(data):
        field = desc.fields_by_number.get(number)
        packable = field is not None and field.label == FD.LABEL_REPEATED and field.type not in (
            FD.TYPE_STRING, FD.TYPE_BYTES, FD.TYPE_MESSAGE)
        if packable and wire == 2:
            elements, index = [], 0
            while index < len(value):
                if element_wire(field) == 0:
                    element, index = read_varint(value, index)
                else:
                    size = 8 if element_wire(field) == 1 else 4
                    element, index = value[index:index + size], index + size
                elements.append(element)
            for element in elements:
                out += write_field(number, element_wire(field), element, rng.choice([0, 0, 1, 3]))
        elif packable:
            payload = varint(value, rng.choice([0, 2])) if wire == 0 else value
            out += write_field(number, 2, payload)
        elif wire == 0 and field is not None and field.type == FD.TYPE_BOOL and value == 1:
            out += write_field(number, 0, rng.choice([2, 255, 2**32, 2**63]))
        elif wire == 0:
            out += write_field(number, 0, value, rng.choice([0, 1, 4]))
        else:
            out += write_field(number, wire, value)
    return bytes(out)


def explicit_defaults(rng, desc, data):
    """Zero values of proto3 fields without presence written first (a later value wins)."""
    out = bytearray()
    for field in desc.fields:
        if field.has_presence or field.label == FD.LABEL_REPEATED or rng.random() < 0.5:
            continue
        wire = SCALAR_WIRE.get(field.type, 2 if field.type in (FD.TYPE_STRING, FD.TYPE_BYTES) else 0)
        value = b"" if wire == 2 else (b"\0" * (8 if wire == 1 else 4) if wire else 0)
        out += write_field(field.number, wire, value)
    return bytes(out) + data


def reversed_fields(desc, data):
    """Fields of each number kept in order, the numbers in reverse order."""
    fields = fields_of(data)
    numbers = sorted({number for number, _, _ in fields}, reverse=True)
    return b"".join(write_field(n, w, v) for number in numbers for n, w, v in fields if n == number)


def generate(seed, count):
    pool = load_pool()
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        name = MESSAGES[i % len(MESSAGES)]
        cls = message_class(pool, name)
        open_enums = [False]
        first, second = cls(), cls()
        fill(rng, first, 1, open_enums)
        fill(rng, second, 1, open_enums)
        variant = rng.choice(["canonical", "merged", "repacked", "defaults", "reversed"])
        data = first.SerializeToString()
        if variant == "merged":
            data += second.SerializeToString()
        elif variant == "repacked":
            data = repack(rng, cls.DESCRIPTOR, data)
        elif variant == "defaults":
            data = explicit_defaults(rng, cls.DESCRIPTOR, data)
        elif variant == "reversed":
            data = reversed_fields(cls.DESCRIPTOR, data)
        parsed = cls.FromString(data)
        cases.append({"message": name, "variant": variant, "hex": data.hex(), "value": json.dumps(json_value(parsed)),
                      "openEnums": open_enums[0]})
    return cases


def read(cases):
    pool = load_pool()
    results = []
    for case in cases:
        try:
            parsed = message_class(pool, case["message"]).FromString(bytes.fromhex(case["hex"]))
            results.append({"value": json.dumps(json_value(parsed))})
        except Exception as error:  # DecodeError, or a RuntimeWarning made an error
            results.append({"error": str(error)})
    return results


def main(argv):
    if len(argv) == 4 and argv[1] == "generate":
        json.dump(generate(int(argv[2]), int(argv[3])), sys.stdout, ensure_ascii=False)
    elif len(argv) == 3 and argv[1] == "read":
        with open(argv[2], encoding="utf-8") as f:
            json.dump(read(json.load(f)), sys.stdout, ensure_ascii=False)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
