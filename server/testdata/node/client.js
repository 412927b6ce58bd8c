// The node-postgres client of TestClientNode: a query with parameters,
// values typed as node-postgres types them, pg-cursor reading a result in
// batches (a portal with a row limit), and an error with its position.
const { Client } = require('pg');
const Cursor = require('pg-cursor');

async function main() {
  const c = new Client({ connectionString: process.argv[2] });
  await c.connect();
  const r = await c.query('SELECT id, name FROM t WHERE id < $1 ORDER BY id', [3]);
  console.log('params', JSON.stringify(r.rows));
  const v = await c.query('SELECT id, ts, amount, name FROM t WHERE id = $1', [5]);
  const row = v.rows[0];
  console.log('types', typeof row.id, row.ts instanceof Date, row.ts.toISOString(), typeof row.amount, row.amount, row.name);
  console.log('fields', v.fields.map((f) => f.name + ':' + f.dataTypeID).join(','));
  const cur = c.query(new Cursor('SELECT id FROM t WHERE id >= $1 ORDER BY id', [10]));
  let batches = 0, total = 0, last = -1;
  for (;;) {
    const rows = await cur.read(100);
    if (rows.length === 0) break;
    batches++;
    total += rows.length;
    last = rows[rows.length - 1].id;
  }
  await cur.close();
  console.log('cursor', batches, total, last);
  try {
    await c.query("SELECT id FROM t WHERE id = 'abc'");
    console.log('error none');
  } catch (e) {
    console.log('error', e.code, e.position, /__rocklake|LINE/.test(e.message) ? 'internal' : 'clean');
  }
  const n = await c.query('SELECT count(*) AS n FROM t');
  console.log('after error', n.rows[0].n);
  await c.end();
}

main().catch((e) => { console.log('FAIL', e.message); process.exit(1); });
