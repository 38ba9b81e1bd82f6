-- A small sqlite3 workload for bench/rtrace.sh: a table of 20,000 rows built
-- by a recursive CTE, an index, a join and a grouping.
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO t SELECT i, 'key-' || (i % 997), i * 0.5 FROM n;
CREATE INDEX tk ON t(k);
SELECT k, count(*), sum(v) FROM t GROUP BY k ORDER BY 3 DESC LIMIT 3;
SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.id < 200;
