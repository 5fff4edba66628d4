// Runs graphql-http's GraphQL-over-HTTP conformance audit (auditServer) against one endpoint
// and prints one JSON object per audit on stdout: {id, name, status, reason, httpStatus, body}.
// The caller judges the results; this script exits non-zero only when the audit itself cannot
// run (the endpoint unreachable, a fatal audit error).
//
//   node audit.mjs http://127.0.0.1:PORT/query
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit.mjs URL');
  process.exit(2);
}

const results = await auditServer({ url });
for (const r of results) {
  const out = { id: r.id, name: r.name, status: r.status };
  if (r.status !== 'ok') {
    out.reason = r.reason;
    out.httpStatus = r.response.status;
    out.contentType = r.response.headers.get('content-type');
    // The body is what a reader needs to see why an audit failed; it is small for GraphQL errors.
    out.body = (await r.response.text().catch((e) => `(body unreadable: ${e})`)).slice(0, 500);
  }
  console.log(JSON.stringify(out));
}
