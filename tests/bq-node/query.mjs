// tests/bq-node/query.mjs — Google's Node client for BigQuery
// (@google-cloud/bigquery, pinned in deploy/tools/package.json) against the
// BigQuery emulator (tests/emulator/bq_emulator.c): a third client, after
// gpugate's own and the bq CLI, that decodes what the emulator answers by
// Google's code. For one usage day it
//
//   1. runs the rows query through BigQuery.query() (jobs.query, then
//      jobs.getQueryResults for the pages after the first), and
//   2. inserts it as a job (createQueryJob: jobs.insert, jobs.get) and pages
//      through getQueryResults by hand, maxResults rows at a time,
//
// and checks that both decode exactly the rows the emulator dumps for that
// day (`bigquery_emulator dump`, NDJSON, given as --expect), in order.
//
// node tests/bq-node/query.mjs --endpoint http://127.0.0.1:PORT
//   --project billing-project --table p.d.t --day 2026-08-01
//   --expect rows.ndjson [--page 10]
// Exit 0 and a line "bq-node: ok ..." when all agree; 1 with the reason.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const { BigQuery } = require('../../deploy/tools/node_modules/@google-cloud/bigquery');

const { values: a } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    project: { type: 'string' },
    table: { type: 'string' },
    day: { type: 'string' },
    expect: { type: 'string' },
    page: { type: 'string', default: '10' },
  },
});
for (const k of ['endpoint', 'project', 'table', 'day', 'expect']) {
  if (!a[k]) {
    console.error(`bq-node: --${k} is required`);
    process.exit(2);
  }
}

const expected = readFileSync(a.expect, 'utf8')
  .split('\n')
  .filter((l) => l && JSON.parse(l).usage_start_time.startsWith(a.day));

// A custom apiEndpoint: the client sends no credentials (the emulator
// checks none), as it does for any local emulator.
const bq = new BigQuery({ projectId: a.project, apiEndpoint: a.endpoint });
const query = {
  query:
    `SELECT TO_JSON_STRING(t) AS row FROM \`${a.table}\` AS t ` +
    'WHERE DATE(_PARTITIONTIME) >= CAST(@day AS DATE) ' +
    'AND DATE(usage_start_time) = CAST(@day AS DATE)',
  params: { day: a.day },
  location: 'US',
  useLegacySql: false,
};

function same(how, rows) {
  const got = rows.map((r) => r.row);
  if (got.length !== expected.length) {
    throw new Error(`${how}: ${got.length} rows, expected ${expected.length}`);
  }
  got.forEach((g, i) => {
    if (g !== expected[i]) {
      throw new Error(`${how}: row ${i} differs:\n${g}\nexpected\n${expected[i]}`);
    }
  });
}

async function main() {
  const pageRows = Number(a.page);
  // 1. query(): jobs.query, then getQueryResults pages, all decoded
  const [all] = await bq.query({ ...query, maxResults: pageRows });
  same('query()', all);

  // 2. a job, its results paged by hand
  const [job] = await bq.createQueryJob(query);
  const rows = [];
  let pageToken;
  let pages = 0;
  do {
    const [page, next] = await job.getQueryResults({
      maxResults: pageRows,
      pageToken,
      autoPaginate: false,
    });
    rows.push(...page);
    pages++;
    pageToken = next && next.pageToken;
  } while (pageToken);
  same('createQueryJob + getQueryResults', rows);
  console.log(
    `bq-node: ok ${expected.length} rows of ${a.day} by query() and ` +
      `by ${pages} pages of job ${job.id}`,
  );
}

main().catch((e) => {
  console.error(`bq-node: ${e.stack || e}`);
  process.exit(1);
});
