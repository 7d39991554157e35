#!/usr/bin/env python3
"""check_shapes.py -- the Batch emulator's JSON against Google's own messages.

Reads a JSON file {"Job": [...], "ListJobsResponse": [...], "Operation":
[...]} and decodes each value with apitools' encoding.JsonToMessage into the
message class of that name from the Cloud SDK's generated Batch v1 client
(googlecloudsdk/generated_clients/apis/batch/v1/batch_v1_messages.py). A
field the message does not define, at any depth, is an error: apitools keeps
it aside as an unrecognised field rather than failing, so every decoded
message is walked for them. Prints one line per value and exits 1 when any
value has an unrecognised field or does not decode.

Run with PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:
/usr/lib/google-cloud-sdk/lib (tests/integration/it_faults.c does).
"""
import json
import sys

from apitools.base.protorpclite import messages as pmessages
from apitools.base.py import encoding
from googlecloudsdk.generated_clients.apis.batch.v1 import (
    batch_v1_messages as batch)


def unrecognised(msg, path, out):
    """Append path.field for each field of msg (and below) not defined."""
    for name in msg.all_unrecognized_fields():
        out.append('%s.%s' % (path, name))
    for field in msg.all_fields():
        if not isinstance(field, pmessages.MessageField):
            continue
        value = msg.get_assigned_value(field.name)
        if value is None:
            continue
        items = value if field.repeated else [value]
        for i, item in enumerate(items):
            where = '%s.%s%s' % (path, field.name,
                                 '[%d]' % i if field.repeated else '')
            if isinstance(item, pmessages.Message):
                unrecognised(item, where, out)


def main(argv):
    with open(argv[1]) as f:
        doc = json.load(f)
    failed = 0
    for kind, values in sorted(doc.items()):
        cls = getattr(batch, kind)
        for i, value in enumerate(values):
            bad = []
            try:
                msg = encoding.JsonToMessage(cls, json.dumps(value))
                unrecognised(msg, kind, bad)
            except Exception as e:  # a value of the wrong type
                bad.append('does not decode: %s' % e)
            if bad:
                failed += 1
                print('%s[%d]: unrecognised %s' % (kind, i, ', '.join(bad)))
            else:
                print('%s[%d]: ok' % (kind, i))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
