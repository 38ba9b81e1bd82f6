#!/usr/bin/env python3
"""Runs one SQL query with DuckDB over a directory written by
`tracekit convert --to parquet` and prints the rows as JSON lines.

Each table is a view over DIR/<table>/*.parquet, as a user would set it up;
tables with no files are left out (queries name tables that exist).

usage: duckdb_check.py DIR QUERY
"""
import json
import os
import sys

import duckdb


def main():
    directory, query = sys.argv[1], sys.argv[2]
    con = duckdb.connect()
    for table in sorted(os.listdir(directory)):
        path = os.path.join(directory, table)
        if os.path.isdir(path) and any(f.endswith(".parquet") for f in os.listdir(path)):
            glob = os.path.join(path, "*.parquet").replace("'", "''")
            con.execute(f"CREATE VIEW \"{table}\" AS SELECT * FROM read_parquet('{glob}')")
    cur = con.execute(query)
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        obj = {}
        for k, v in zip(names, row):
            if v is None:
                continue
            if isinstance(v, (int, float, str, bool)):
                obj[k] = v
            else:
                obj[k] = str(v)
        print(json.dumps(obj))


if __name__ == "__main__":
    main()
