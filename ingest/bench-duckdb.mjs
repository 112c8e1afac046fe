// The DuckDB baseline of make bench-ingest: read a SERP JSONL file,
// unnest its results, sort by keyword and rank and write zstd Parquet,
// the work `kwdata ingest --serp-jsonl` does (without url_key, which
// DuckDB has no function for). Usage: node bench-duckdb.mjs IN.jsonl OUT.parquet
import { DuckDBInstance } from '@duckdb/node-api';

const [input, output] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const q = (s) => s.replaceAll("'", "''");
await con.run(`COPY (
  SELECT keyword, r.rank::INTEGER AS rank, r.url AS url
  FROM (SELECT keyword, unnest(results) AS r
        FROM read_json('${q(input)}', format = 'newline_delimited',
          columns = {keyword: 'VARCHAR', country: 'VARCHAR', results: 'STRUCT(rank BIGINT, url VARCHAR)[]'}))
  ORDER BY keyword, rank
) TO '${q(output)}' (FORMAT parquet, COMPRESSION zstd)`);
const r = await con.runAndReadAll(`SELECT count(*) FROM read_parquet('${q(output)}')`);
console.log(String(r.getRows()[0][0]));
