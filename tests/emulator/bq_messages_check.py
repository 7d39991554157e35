#!/usr/bin/env python3
"""Check BigQuery v2 JSON bodies against Google's own message definitions.

Usage: bq_messages_check.py MESSAGE < body.json
       (MESSAGE: QueryRequest, QueryResponse, GetQueryResultsResponse, Job)

Decodes the body with apitools' encoding into the Cloud SDK's generated
bigquery_v2_messages (googlecloudsdk/generated_clients/apis/bigquery/v2,
shipped with google-cloud-cli) and fails, naming them, on any field those
messages do not define, at any depth, or on a value of the wrong type.
Exit status: 0 conforming, 1 not, 2 the SDK is not installed (the caller
skips, saying so). Run with
PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:/usr/lib/google-cloud-sdk/lib
"""
import sys


def unknown(msg, path, out):
    """Every unrecognized field of msg and of the messages it holds."""
    from apitools.base.protorpclite import messages

    for name in msg.all_unrecognized_fields():
        out.append(path + name)
    for field in msg.all_fields():
        value = msg.get_assigned_value(field.name)
        if value is None or not isinstance(field, messages.MessageField):
            continue
        for i, item in enumerate(value if field.repeated else [value]):
            if isinstance(item, messages.Message):
                sub = "%s%s[%d]." % (path, field.name, i) if field.repeated \
                    else "%s%s." % (path, field.name)
                unknown(item, sub, out)


def main():
    try:
        from apitools.base.py import encoding
        from googlecloudsdk.generated_clients.apis.bigquery.v2 import \
            bigquery_v2_messages as m
    except ImportError as e:
        print("the Cloud SDK's bigquery v2 messages are not installed: %s" % e)
        return 2
    if len(sys.argv) != 2 or not hasattr(m, sys.argv[1]):
        print("usage: bq_messages_check.py MESSAGE < body.json")
        return 1
    body = sys.stdin.read()
    try:
        msg = encoding.JsonToMessage(getattr(m, sys.argv[1]), body)
    except Exception as e:  # a wrong type, malformed JSON
        print("%s: does not decode: %s" % (sys.argv[1], e))
        return 1
    extra = []
    unknown(msg, "", extra)
    if extra:
        print("%s: fields the API does not define: %s" %
              (sys.argv[1], ", ".join(extra)))
        return 1
    print("%s: conforms" % sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
