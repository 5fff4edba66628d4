// Starts GraphiQL against the gateway that served this page. Queries and mutations go to the
// endpoint over HTTP POST; subscriptions go to the same URL over WebSocket (graphql-ws), so the
// page works behind any host name or TLS terminator the gateway is reached through.
(function () {
  'use strict';
  var root = document.getElementById('graphiql');
  var http = new URL(root.dataset.endpoint, window.location.href);
  var ws = new URL(http.href);
  ws.protocol = http.protocol === 'https:' ? 'wss:' : 'ws:';

  var fetcher = GraphiQL.createFetcher({ url: http.href, subscriptionUrl: ws.href });
  var app = React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultQuery: root.dataset.defaultQuery,
    // A bearer token is what every non-introspection field needs; the hint shows where it goes.
    // A server that made its own demo user (the embedded default) fills in that user's token.
    defaultHeaders: JSON.stringify({ Authorization: 'Bearer ' + (root.dataset.token || '') }, null, 2),
    defaultEditorToolsVisibility: 'headers',
    isHeadersEditorEnabled: true,
    // Tokens stay out of localStorage unless the user opts in from the settings dialog.
    shouldPersistHeaders: false,
  });
  root.textContent = '';
  ReactDOM.createRoot(root).render(app);
})();
