// Reads the lake under process.argv[2] with DuckDB, as an analyst would, and
// prints one JSON object of figures for duckdb_test.go to compare.
import { DuckDBInstance } from '@duckdb/node-api';

const data = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const read = (ds) => `read_parquet('${data}/lake/${ds}/*/*/*.parquet', hive_partitioning=true)`;
const one = async (sql) => (await c.runAndReadAll(sql)).getRowObjectsJson();

// The intent_groups view of the README, verbatim but for the lake path.
await c.run(`CREATE VIEW intent_groups AS
SELECT i.country, i.date, i.intent AS leader, count(*) AS size,
       coalesce(sum(k.volume), 0) AS total_volume
FROM ${read('intents')} i
JOIN ${read('keywords')} k
  USING (country, date, keyword)
GROUP BY ALL`);

const out = {
  keywords: await one(`SELECT country, CAST(date AS VARCHAR) AS date, count(*) AS n,
      count(volume_range) AS ranges, sum(len(monthly)) AS months, sum(cpc_micros) AS cpc
    FROM ${read('keywords')} GROUP BY ALL ORDER BY country`),
  serps: await one(`SELECT country, count(*) AS n, count(DISTINCT url_key) AS keys FROM ${read('serps')} GROUP BY ALL ORDER BY country`),
  related: await one(`SELECT country, count(*) AS n, sum(overlap) AS overlap, count(*) FILTER (same_intent) AS same
    FROM ${read('related')} GROUP BY ALL ORDER BY country`),
  intents: await one(`SELECT country, count(*) AS n, count(DISTINCT intent) AS leaders FROM ${read('intents')} GROUP BY ALL ORDER BY country`),
  groups: await one(`SELECT country, leader, size, total_volume FROM intent_groups ORDER BY country, total_volume DESC, leader LIMIT 5`),
  types: await one(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${read('related')})`),
};
console.log(JSON.stringify(out));
