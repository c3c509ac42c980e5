// Subscribes to one job with the reference graphql-ws client and prints every result
// as one JSON line; exits 0 when the server completes the subscription.
//   node subscribe.mjs <ws-url> <api-key> <job-id>
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, key, jobId] = process.argv.slice(2);
if (!url || !key || !jobId) {
  console.error('usage: node subscribe.mjs <ws-url> <api-key> <job-id>');
  process.exit(2);
}

const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: { authorization: `Bearer ${key}` },
  retryAttempts: 0,
  lazy: true,
});

const timer = setTimeout(() => {
  console.error('no completion within 120 s');
  process.exit(1);
}, 120_000);

client.subscribe(
  {
    query: 'subscription($id: ID!) { jobUpdated(id: $id) { id state progress attempts artifacts { id } } }',
    variables: { id: jobId },
  },
  {
    next: (result) => console.log(JSON.stringify(result)),
    error: (err) => {
      console.error('subscription error:', JSON.stringify(err, Object.getOwnPropertyNames(err)));
      process.exit(1);
    },
    complete: async () => {
      clearTimeout(timer);
      await client.dispose();
      process.exit(0);
    },
  },
);
