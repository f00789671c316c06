#!/usr/bin/env python3
"""Writes Protos/google/protobuf/*.proto: the well-known types Courier maps to Swift types.

Google's well-known .proto files are not on the build machines (Debian ships them in
libprotobuf-dev, which Courier does not install), so they are vendored under Protos/. They are
written here from the descriptors that Google's Python runtime ships (`pip install protobuf`;
made with 7.36.2): the same names, field numbers, types, oneofs and file options as upstream's
src/google/protobuf/*.proto, without upstream's comments (descriptors do not carry them). The
license (BSD-3-Clause) is copied from the package's LICENSE into Protos/google/protobuf/LICENSE.

Usage: pip install protobuf; scripts/make-wkt-protos.py
"""

import os
import shutil
import sys

import google.protobuf
from google.protobuf import any_pb2, descriptor_pb2, duration_pb2, empty_pb2, struct_pb2, timestamp_pb2, wrappers_pb2
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Protos", "google", "protobuf")

HEADER = """\
// Protocol Buffers - Google's data interchange format
// Copyright 2008 Google Inc.  All rights reserved.
// https://developers.google.com/protocol-buffers/
//
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file or at
// https://developers.google.com/open-source/licenses/bsd
//
// Written by Courier's scripts/make-wkt-protos.py from the descriptor in Google's Python
// protobuf %s (upstream's comments are not in descriptors); see README.md beside this file.
"""

TYPES = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64", F.TYPE_UINT64: "uint64",
    F.TYPE_INT32: "int32", F.TYPE_UINT32: "uint32", F.TYPE_BOOL: "bool", F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
}
FILE_OPTIONS = ["cc_enable_arenas", "csharp_namespace", "go_package", "java_multiple_files", "java_outer_classname",
                "java_package", "objc_class_prefix"]


def type_name(field, package):
    if field.type in TYPES:
        return TYPES[field.type]
    name = field.type_name.lstrip(".")
    return name[len(package) + 1:] if name.startswith(package + ".") else name


def message_text(message, package, nested_maps, indent=""):
    lines = [indent + "message %s {" % message.name]
    inner = indent + "  "
    entries = {n.name: n for n in message.nested_type if n.options.map_entry}
    oneofs = {}
    for field in message.field:
        if field.HasField("oneof_index"):
            oneofs.setdefault(field.oneof_index, []).append(field)
    done = set()
    for field in message.field:
        if field.HasField("oneof_index"):
            if field.oneof_index in done:
                continue
            done.add(field.oneof_index)
            lines.append(inner + "oneof %s {" % message.oneof_decl[field.oneof_index].name)
            for member in oneofs[field.oneof_index]:
                lines.append(inner + "  %s %s = %d;" % (type_name(member, package), member.name, member.number))
            lines.append(inner + "}")
            continue
        entry = entries.get(field.type_name.rsplit(".", 1)[-1]) if field.type == F.TYPE_MESSAGE else None
        if entry is not None:
            key, value = entry.field
            kind = "map<%s, %s>" % (type_name(key, package), type_name(value, package))
        else:
            kind = ("repeated " if field.label == F.LABEL_REPEATED else "") + type_name(field, package)
        lines.append(inner + "%s %s = %d;" % (kind, field.name, field.number))
    lines.append(indent + "}")
    return lines


def proto_text(module, version):
    fd = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    out = [HEADER % version, 'syntax = "%s";' % fd.syntax, "", "package %s;" % fd.package, ""]
    for name in FILE_OPTIONS:
        if fd.options.HasField(name):
            value = getattr(fd.options, name)
            text = ("true" if value else "false") if isinstance(value, bool) else '"%s"' % value
            out.append("option %s = %s;" % (name, text))
    for message in fd.message_type:
        out.append("")
        out += message_text(message, fd.package, True)
    for enum in fd.enum_type:
        out.append("")
        out.append("enum %s {" % enum.name)
        for value in enum.value:
            out.append("  %s = %d;" % (value.name, value.number))
        out.append("}")
    return fd.name, "\n".join(out) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    version = google.protobuf.__version__
    for module in (any_pb2, duration_pb2, empty_pb2, struct_pb2, timestamp_pb2, wrappers_pb2):
        name, text = proto_text(module, version)
        with open(os.path.join(ROOT, "Protos", name), "w") as f:
            f.write(text)
    dist = os.path.dirname(os.path.dirname(os.path.dirname(google.protobuf.__file__)))
    licenses = [os.path.join(dist, d, "LICENSE") for d in os.listdir(dist)
                if d.startswith("protobuf-") and d.endswith(".dist-info")]
    shutil.copyfile(licenses[0], os.path.join(OUT, "LICENSE"))
    print("wrote the well-known types of protobuf %s to %s" % (version, os.path.relpath(OUT, ROOT)))


if __name__ == "__main__":
    sys.exit(main())
