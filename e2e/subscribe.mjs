// Subscribes to msggate's syncEvents with the npm graphql-ws client (graphql-transport-ws) and
// reports, as JSON lines on stdout, what a real client sees:
//   {"type":"connected"}                 the connection was acknowledged
//   {"type":"armed"}                     stdin said "send": the clock runs from here
//   {"type":"event","event":{...},"elapsedMs":N}  an event (elapsedMs once armed)
// It exits after the first NEW_MESSAGE that arrives once armed.
//
// Usage: node subscribe.mjs WS_URL JWT [SINCE_TOKEN]
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, jwt, since] = process.argv.slice(2);
if (!url || !jwt) {
  console.error('usage: node subscribe.mjs WS_URL JWT [SINCE_TOKEN]');
  process.exit(2);
}

const print = (o) => process.stdout.write(JSON.stringify(o) + '\n');
let armedAt = null;

const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: `Bearer ${jwt}` },
  lazy: false,
  retryAttempts: 0,
  on: { connected: () => print({ type: 'connected' }) },
});

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'send') {
    armedAt = performance.now();
    print({ type: 'armed' });
  }
});

const query = `subscription($since: String) {
  syncEvents(since: $since) { type token position conversationID seq sendID maxSeq readSeq unreadCount }
}`;

client.subscribe(
  { query, variables: since ? { since } : {} },
  {
    next: (result) => {
      const event = result.data?.syncEvents ?? null;
      const out = { type: 'event', event };
      if (result.errors) out.errors = result.errors;
      if (armedAt !== null) out.elapsedMs = performance.now() - armedAt;
      print(out);
      if (armedAt !== null && event?.type === 'NEW_MESSAGE') {
        client.dispose();
        process.exit(0);
      }
    },
    error: (err) => {
      const reason = err instanceof Error ? err.message : (err?.reason ?? JSON.stringify(err));
      print({ type: 'error', error: `${err?.code ?? ''} ${reason}`.trim() });
      process.exit(1);
    },
    complete: () => {
      print({ type: 'complete' });
      process.exit(1);
    },
  },
);
