// Drives msggate's GraphiQL page in Debian's headless Chromium the way a person would: open the
// page, open the documentation explorer, put a token in the Headers tab, put a query in the
// editor, press the run button, and read the result pane. Without a token or a query, the
// Headers tab or the query editor is left as the page opened it (the embedded default fills in
// its demo token). Every request to a host other than loopback is aborted and recorded.
// Prints one JSON object on stdout:
//   {docsText, headersHint, headersText, queryText, resultText, blocked: [url], loopbackRequests,
//    consoleErrors: [text], pageErrors: [text], failedAt, error}
// failedAt and error name the step that could not be done; the caller judges the rest.
//
//   node graphiql.mjs '{"url": "http://127.0.0.1:PORT/", "token": "optional", "query": "optional",
//                      "expect": "text the result must contain", "userDataDir": "/tmp/fresh",
//                      "screenshot": "optional.png"}'
import { chromium } from 'playwright-core';

const opts = JSON.parse(process.argv[2] || '{}');
for (const k of ['url', 'expect', 'userDataDir']) {
  if (!opts[k]) {
    console.error(`graphiql.mjs: option ${k} is required`);
    process.exit(2);
  }
}

const loopback = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const isLoopback = (url) => {
  try {
    const u = new URL(url);
    return u.protocol === 'data:' || u.protocol === 'blob:' || loopback.has(u.hostname);
  } catch {
    return false;
  }
};

const report = { blocked: [], loopbackRequests: 0, consoleErrors: [], pageErrors: [] };
const context = await chromium.launchPersistentContext(opts.userDataDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    // Chromium's own traffic (not the page's) never reaches page.route; a dead proxy stops it.
    // Loopback always bypasses proxies in Chromium, so the gateway stays reachable.
    '--proxy-server=http://127.0.0.1:9',
  ],
  viewport: { width: 1400, height: 900 },
});
let step = 'start';
try {
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLoopback(url)) {
      report.loopbackRequests++;
      return route.continue();
    }
    report.blocked.push(url);
    return route.abort('blockedbyclient');
  });
  await context.routeWebSocket(() => true, (ws) => {
    if (isLoopback(ws.url())) {
      report.loopbackRequests++;
      ws.connectToServer();
      return;
    }
    report.blocked.push(ws.url());
    ws.close();
  });

  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(30_000);
  page.on('console', (m) => {
    if (m.type() === 'error') report.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => report.pageErrors.push(String(e)));

  step = 'load the page';
  await page.goto(opts.url, { waitUntil: 'load' });
  await page.locator('.graphiql-query-editor .CodeMirror').waitFor();

  step = 'open the documentation explorer';
  // The schema comes from an introspection request sent with the headers' "Bearer " hint, before
  // any token is set: the docs list the root types only if that request worked.
  await page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
  const docs = page.locator('.graphiql-doc-explorer');
  await docs.getByText('mutation: Mutation').waitFor();
  report.docsText = (await docs.innerText()).replace(/\u00a0/g, ' ');

  // Replaces an editor's text as a user would: focus it, select all, and paste-like insert
  // (insertText skips CodeMirror's bracket auto-closing, which would double typed brackets).
  const fill = async (editor, text) => {
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(text);
  };
  const editorText = (editor) => editor.evaluate((el) => el.CodeMirror.getValue());

  step = 'open the Headers tab and set the token';
  await page.getByRole('button', { name: 'Headers', exact: true }).click();
  const headers = page.locator('.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror');
  report.headersHint = await editorText(headers);
  if (opts.token) await fill(headers, JSON.stringify({ Authorization: `Bearer ${opts.token}` }));
  report.headersText = await editorText(headers);

  step = 'set the query';
  const query = page.locator('.graphiql-query-editor .CodeMirror');
  if (opts.query) await fill(query, opts.query);
  report.queryText = await editorText(query);

  step = 'run the query';
  await page.locator('.graphiql-execute-button').click();

  step = 'read the result pane';
  const result = page.locator('.result-window');
  await page.waitForFunction(
    (expect) => {
      const el = document.querySelector('.result-window');
      return el && (el.innerText.includes(expect) || el.innerText.includes('"errors"'));
    },
    opts.expect,
  );
  // The editor's whole text: CodeMirror draws only the lines in view, so a long result's
  // innerText is cut off.
  report.resultText = await editorText(result.locator('.CodeMirror'));
  if (opts.screenshot) await page.screenshot({ path: opts.screenshot });
} catch (e) {
  report.failedAt = step;
  report.error = String(e);
  const page = context.pages()[0];
  if (page && opts.screenshot) await page.screenshot({ path: opts.screenshot }).catch(() => {});
} finally {
  await context.close();
}
console.log(JSON.stringify(report));
