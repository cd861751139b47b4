"""Checks the homomorphic column of zcoll-bench coll's --csv and the field of its --json.

    coll_homomorphic_check.py CSV JSON EXPECTED [CSV JSON EXPECTED ...]

EXPECTED is on, off or - (the setting does not apply: not a sum, or a codec whose streams do not add).
The column must be the CSV's last (readers of the older columns by position keep working), hold EXPECTED
on every record, every record must have the header's number of fields, and the JSON's top-level
"homomorphic" must be true, false or null to match.
"""
import csv
import json
import sys

args = sys.argv[1:]
if not args or len(args) % 3 != 0:
    sys.exit(__doc__)
for csv_path, json_path, expected in zip(args[0::3], args[1::3], args[2::3]):
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        rows = list(reader)
    assert header and header[-1] == "homomorphic", f"{csv_path}: last column {header[-1:]}, expected homomorphic"
    assert header.count("homomorphic") == 1, f"{csv_path}: {header.count('homomorphic')} homomorphic columns"
    assert rows, f"{csv_path}: no rows"
    for row in rows:
        assert None not in row and None not in row.values(), f"{csv_path}: a record with another number of fields: {row}"
        assert row["homomorphic"] == expected, f"{csv_path}: homomorphic {row['homomorphic']!r}, expected {expected!r}"
    with open(json_path) as f:
        report = json.load(f)
    want = {"on": True, "off": False, "-": None}[expected]
    assert "homomorphic" in report, f"{json_path}: no homomorphic field"
    assert report["homomorphic"] is want, f"{json_path}: homomorphic {report['homomorphic']!r}, expected {want!r}"
    assert len(report["rows"]) == len(rows), f"{json_path}: {len(report['rows'])} rows, the CSV has {len(rows)}"
print(f"coll_homomorphic_check: {len(args) // 3} file pair(s) as expected")
