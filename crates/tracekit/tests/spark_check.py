#!/usr/bin/env python3
"""Reads every table of a directory written by `tracekit convert --to
parquet` with Apache Spark and with DuckDB, and checks that both engines
see the same data: per column, the count of non-null values, the count of
distinct values and, for integer columns, the sum.

Spark reads Parquet with its own reader (parquet-mr and a vectorized
decoder of its own), so this catches encodings another engine cannot read
(Spark 4.3 cannot read an unsigned 64-bit column written BYTE_STREAM_SPLIT).
Nanosecond timestamps need `spark.sql.legacy.parquet.nanosAsLong`, as
docs/sql.md says.

usage: spark_check.py DIR    (exit 0: all equal; 1: a difference, printed)
"""
import os
import sys

import duckdb
from pyspark.sql import SparkSession

INTEGER_SPARK = ("tinyint", "smallint", "int", "bigint", "decimal(20,0)")


def tables(directory):
    for table in sorted(os.listdir(directory)):
        path = os.path.join(directory, table)
        if os.path.isdir(path) and any(f.endswith(".parquet") for f in os.listdir(path)):
            yield table, path


def spark_figures(spark, path):
    df = spark.read.parquet(path)
    out = {}
    for name, ty in df.dtypes:
        exprs = [f"count(`{name}`)", f"count(DISTINCT `{name}`)"]
        if ty in INTEGER_SPARK:
            exprs.append(f"CAST(sum(CAST(`{name}` AS DECIMAL(38,0))) AS STRING)")
        row = df.selectExpr(*exprs).collect()[0]
        out[name] = [str(v) for v in row]
    return out


def duckdb_figures(con, path, integer_columns):
    glob = os.path.join(path, "*.parquet").replace("'", "''")
    rel = f"read_parquet('{glob}')"
    described = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
    out = {}
    for name, ty, *_ in described:
        exprs = [f'count("{name}")', f'count(DISTINCT "{name}")']
        if name in integer_columns:
            # Spark reads nanosecond timestamps as their integer.
            value = f'epoch_ns("{name}")' if ty.startswith("TIMESTAMP") else f'"{name}"'
            exprs.append(f"CAST(sum(CAST({value} AS DECIMAL(38,0))) AS VARCHAR)")
        row = con.execute(f"SELECT {', '.join(exprs)} FROM {rel}").fetchall()[0]
        out[name] = [str(v) for v in row]
    return out


def main():
    directory = sys.argv[1]
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    bad = 0
    checked = 0
    for table, path in tables(directory):
        try:
            s = spark_figures(spark, path)
        except Exception as e:  # noqa: BLE001 - report which table fails
            print(f"{table}: Spark cannot read it: {str(e).splitlines()[0][:300]}")
            bad += 1
            continue
        integer_columns = {
            n for n, ty in spark.read.parquet(path).dtypes if ty in INTEGER_SPARK
        }
        d = duckdb_figures(con, path, integer_columns)
        for name in s:
            checked += 1
            if s[name] != d.get(name):
                print(f"{table}.{name}: Spark {s[name]} DuckDB {d.get(name)}")
                bad += 1
    print(f"{checked} columns checked, {bad} differences")
    sys.exit(1 if bad or not checked else 0)


if __name__ == "__main__":
    main()
