"""Checks zcoll-bench codec's --csv and --json files for a data name that holds commas.

    codec_files_check.py CODEC_CSV CODEC_JSON DATA_PREFIX ROWS

Every CSV record must have exactly the header's fields (a comma in an unquoted field would add one), the
data column must start with DATA_PREFIX, and the JSON must parse and name the same data.
"""
import csv
import json
import sys

csv_path, json_path, prefix, expected_rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(csv_path, newline="") as f:
    rows = list(csv.DictReader(f))
assert len(rows) == expected_rows, f"{len(rows)} CSV records, expected {expected_rows}"
for row in rows:
    assert None not in row and None not in row.values(), f"a CSV record with another number of fields: {row}"
    assert row["data"].startswith(prefix), f"data column {row['data']!r} does not start with {prefix!r}"
with open(json_path) as f:
    report = json.load(f)
assert report["data"] == rows[0]["data"], f"JSON data {report['data']!r} != CSV data {rows[0]['data']!r}"
assert len(report["rows"]) == expected_rows
