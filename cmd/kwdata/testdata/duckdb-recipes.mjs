// Runs the SQL of docs/ANALYSTS.md with DuckDB, as an analyst would paste
// it, in the working directory docs_map_test.go chooses. process.argv[2]
// names a file of statements, each ending in ";" at the end of a line. It
// prints, as JSON, the rows each statement answered, in order.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const sql = readFileSync(process.argv[2], 'utf8');
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const out = [];
for (const stmt of sql.split(/;[ \t]*(?:\n|$)/).map((s) => s.trim()).filter((s) => s.replace(/--.*$/gm, '').trim() !== '')) {
  out.push((await c.runAndReadAll(stmt)).getRowObjectsJson());
}
console.log(JSON.stringify(out));
