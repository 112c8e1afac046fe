// Answers many SQL queries with DuckDB in one process (Node starts
// slowly): process.argv[2] names a JSON file {"setup": [sql, ...],
// "queries": [sql, ...]}; the setup statements run first, then each query,
// and one JSON array is printed holding each query's rows as arrays
// (BIGINT and HUGEINT as strings, DOUBLE as numbers, NULL as null).
// explore_duckdb_test.go writes the file and reads the answer.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const { setup, queries } = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
for (const sql of setup) {
  await c.run(sql);
}
const out = [];
for (const sql of queries) {
  try {
    out.push((await c.runAndReadAll(sql)).getRowsJson());
  } catch (e) {
    throw new Error(`${e.message}\nin the query: ${sql}`);
  }
}
process.stdout.write(JSON.stringify(out));
