#!/usr/bin/env python3
"""log_shapes.py — hold JSON documents to Cloud Logging's own message
definitions: the Cloud SDK's generated logging_v2_messages.py (google-cloud-cli),
read through apitools' JSON mapping, as gcloud reads Logging's answers.

    log_shapes.py MESSAGE FILE

MESSAGE is a message of logging_v2_messages (ListLogEntriesRequest,
ListLogEntriesResponse, WriteLogEntriesRequest, LogEntry); FILE holds one JSON
document a line. Every document must decode, and no field anywhere in it may
be unrecognised (a misspelt or invented field, an enum value Logging does not
have). Prints one line per problem and "ok N MESSAGE" at the end; exits 1 on
any problem.

Run with PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:/usr/lib/google-cloud-sdk/lib.
"""
import sys

from apitools.base.protorpclite import messages as pm
from apitools.base.py import encoding
from googlecloudsdk.generated_clients.apis.logging.v2 import logging_v2_messages as m


def unrecognised(msg, path):
    """Every unrecognised field under msg, as dotted paths."""
    out = [path + "." + name for name in msg.all_unrecognized_fields()]
    for field in msg.all_fields():
        if not isinstance(field, pm.MessageField):
            continue
        value = msg.get_assigned_value(field.name)
        if value is None:
            continue
        items = value if field.repeated else [value]
        for i, item in enumerate(items):
            if isinstance(item, pm.Message):
                sub = "%s.%s%s" % (path, field.name, "[%d]" % i if field.repeated else "")
                out.extend(unrecognised(item, sub))
    return out


def main(argv):
    if len(argv) != 3 or not hasattr(m, argv[1]):
        sys.stderr.write("usage: log_shapes.py MESSAGE FILE\n")
        return 2
    kind = getattr(m, argv[1])
    problems = 0
    count = 0
    with open(argv[2], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            count += 1
            try:
                msg = encoding.JsonToMessage(kind, line)
            except Exception as e:  # a document apitools cannot read at all
                print("line %d: does not decode as %s: %s" % (n, argv[1], e))
                problems += 1
                continue
            for p in unrecognised(msg, argv[1]):
                print("line %d: unrecognised field %s" % (n, p))
                problems += 1
    print("ok %d %s" % (count, argv[1]) if not problems else "%d problems" % problems)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
